// JSON calls to third parties (LLM provider, metasearch): a timeout per attempt, bounded
// retries with exponential backoff and jitter on timeouts, connection errors, 429 and 5xx,
// and the outbound metrics. Error messages never carry the request's credentials.
import { type Dispatcher, fetch } from "undici";
import { ScraperError } from "../errors.ts";
import type { ApiMetrics } from "../metrics.ts";

export interface OutboundCall {
  target: string;
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: unknown;
  timeoutMs: number;
  retries: number;
  signal?: AbortSignal;
  dispatcher?: Dispatcher;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function callJson(metrics: ApiMetrics, call: OutboundCall): Promise<unknown> {
  const { outbound } = metrics;
  const started = performance.now();
  let outcome = "ok";
  try {
    for (let attempt = 0; ; attempt++) {
      let retryable: boolean;
      let message: string;
      try {
        const timeout = AbortSignal.timeout(call.timeoutMs);
        const res = await fetch(call.url, {
          method: call.method ?? "GET",
          headers: {
            accept: "application/json",
            ...(call.body ? { "content-type": "application/json" } : {}),
            ...call.headers,
          },
          body: call.body === undefined ? undefined : JSON.stringify(call.body),
          signal: call.signal ? AbortSignal.any([call.signal, timeout]) : timeout,
          ...(call.dispatcher ? { dispatcher: call.dispatcher } : {}),
        });
        const text = await res.text();
        if (res.ok) {
          try {
            return JSON.parse(text) as unknown;
          } catch {
            throw new ScraperError("UPSTREAM_ERROR", [`${call.target} answered with invalid JSON`]);
          }
        }
        retryable = res.status === 429 || res.status >= 500;
        message = `${call.target} answered HTTP ${res.status}`;
      } catch (err) {
        if (err instanceof ScraperError) throw err;
        if (call.signal?.aborted) throw err;
        retryable = true;
        message = `${call.target} unreachable or timed out`;
      }
      if (!retryable || attempt >= call.retries) throw new ScraperError("UPSTREAM_ERROR", [message]);
      outbound.retries.inc({ target: call.target });
      await sleep(Math.min(4_000, 250 * 2 ** attempt) * (0.5 + Math.random()));
    }
  } catch (err) {
    outcome = err instanceof ScraperError ? err.code.toLowerCase() : "error";
    throw err;
  } finally {
    outbound.calls.inc({ target: call.target, outcome });
    outbound.latency.observe({ target: call.target }, (performance.now() - started) / 1000);
  }
}
