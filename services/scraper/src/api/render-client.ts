// The API's client of the rendering service (wire format in render/wire.ts). Connection
// failures (the renderer restarting) are retried twice with a short backoff; everything else
// is the renderer's answer, mapped back to the error registry.
import { Agent, fetch } from "undici";
import { isScraperError, ScraperError } from "../errors.ts";
import type { ApiMetrics } from "../metrics.ts";
import type { RenderRequest, RenderResponse } from "../render/wire.ts";

export interface RenderClient {
  render(req: RenderRequest, signal: AbortSignal): Promise<RenderResponse>;
  /** True when GET /scrape answers 200. */
  probe(): Promise<boolean>;
  close(): Promise<void>;
}

const RETRIES = 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `apiKey`: the scraper's API key, which the rendering service requires when one is configured. */
export function httpRenderClient(baseUrl: string, metrics: ApiMetrics, apiKey?: string): RenderClient {
  const agent = new Agent({ connections: 256, keepAliveTimeout: 10_000, headersTimeout: 0, bodyTimeout: 0 });
  const endpoint = new URL("/scrape", baseUrl).href;
  const { outbound } = metrics;

  async function once(req: RenderRequest, signal: AbortSignal): Promise<RenderResponse> {
    const res = await fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json", ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
      body: JSON.stringify(req),
      dispatcher: agent,
      signal,
    });
    const text = await res.text();
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new ScraperError("RENDERER_UNAVAILABLE", [`bad answer from renderer (HTTP ${res.status})`]);
    }
    if (res.ok) return body as unknown as RenderResponse;
    const retryAfter = res.headers.get("retry-after");
    throw ScraperError.fromWire(
      String(body.code ?? "UPSTREAM_ERROR"),
      String(body.error ?? `renderer answered HTTP ${res.status}`),
      retryAfter ? Number(retryAfter) : undefined,
    );
  }

  return {
    async render(req, signal) {
      const started = performance.now();
      let outcome = "ok";
      try {
        for (let attempt = 0; ; attempt++) {
          try {
            return await once(req, signal);
          } catch (err) {
            if (isScraperError(err)) throw err;
            if (signal.aborted) throw err;
            if (attempt >= RETRIES) {
              throw new ScraperError("RENDERER_UNAVAILABLE", ["cannot reach the rendering service"], { retryAfter: 1 });
            }
            outbound.retries.inc({ target: "renderer" });
            await sleep(200 * 2 ** attempt + Math.random() * 100);
          }
        }
      } catch (err) {
        outcome = isScraperError(err) ? err.code.toLowerCase() : "error";
        throw err;
      } finally {
        outbound.calls.inc({ target: "renderer", outcome });
        outbound.latency.observe({ target: "renderer" }, (performance.now() - started) / 1000);
      }
    },
    async probe() {
      try {
        const res = await fetch(endpoint, { dispatcher: agent, signal: AbortSignal.timeout(3_000) });
        await res.arrayBuffer();
        return res.ok;
      } catch {
        return false;
      }
    },
    close: () => agent.close(),
  };
}
