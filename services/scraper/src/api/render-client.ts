// The API's client of the rendering service (wire format in render/wire.ts), on the shared
// resilience policy: connection failures (the renderer restarting) are retried twice with a short
// full-jitter backoff; everything else is the renderer's answer, mapped back to the error
// registry. No per-attempt timeout here: a render is bounded by the caller's signal (the scrape's
// own timeout) and by the renderer's task timeout. Every answer is parsed with the wire schema the
// rendering service serialises it with (render/wire.ts).
import { OutboundPolicy } from "@capstan/shared/resilience";
import { Agent, fetch } from "undici";
import { isScraperError, ScraperError } from "../errors.ts";
import { zodMessage } from "../http-errors.ts";
import type { ApiMetrics } from "../metrics.ts";
import { type RenderRequest, type RenderResponse, renderResponseSchema } from "../render/wire.ts";

export interface RenderClient {
  render(req: RenderRequest, signal: AbortSignal): Promise<RenderResponse>;
  /** True when GET /scrape answers 200. */
  probe(): Promise<boolean>;
  close(): Promise<void>;
}

const RETRIES = 2;

/** `apiKey`: the scraper's API key, which the rendering service requires when one is configured. */
export function httpRenderClient(baseUrl: string, metrics: ApiMetrics, apiKey?: string): RenderClient {
  const agent = new Agent({ connections: 256, keepAliveTimeout: 10_000, headersTimeout: 0, bodyTimeout: 0 });
  const endpoint = new URL("/scrape", baseUrl).href;
  const policy = new OutboundPolicy({
    target: "renderer",
    maxAttempts: RETRIES + 1,
    baseDelayMs: 200,
    maxDelayMs: 1_000,
    metrics: metrics.outbound,
    // The renderer's own answers are final; only a connection that failed is tried again.
    classify: (err) =>
      isScraperError(err) ? { retry: false, outcome: err.code.toLowerCase() } : { retry: true, outcome: "error" },
  });

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
    if (res.ok) {
      const page = renderResponseSchema.safeParse(body);
      if (page.success) return page.data;
      throw new ScraperError("RENDERER_UNAVAILABLE", [`bad answer from renderer: ${zodMessage(page.error)}`]);
    }
    const retryAfter = res.headers.get("retry-after");
    throw ScraperError.fromWire(
      String(body.code ?? "UPSTREAM_ERROR"),
      String(body.error ?? `renderer answered HTTP ${res.status}`),
      retryAfter ? Number(retryAfter) : undefined,
    );
  }

  return {
    async render(req, signal) {
      try {
        return await policy.execute(() => once(req, signal), { signal });
      } catch (err) {
        if (isScraperError(err) || signal.aborted) throw err;
        throw new ScraperError("RENDERER_UNAVAILABLE", ["cannot reach the rendering service"], { retryAfter: 1 });
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
