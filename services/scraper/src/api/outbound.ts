// JSON calls to third parties (LLM provider, metasearch) through the shared resilience policy: a
// timeout per attempt, bounded full-jitter retries on timeouts, connection errors, 429 and 5xx
// (Retry-After honoured), and the outbound metrics. Error messages never carry the request's
// credentials.
import { type Failure, isRetryableStatus, OutboundPolicy } from "@capstan/shared/resilience";
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

/** A failed attempt, as the resilience policy sees it; the caller gets an UPSTREAM_ERROR. */
export class AttemptFailure extends Error {
  readonly failure: Failure;
  constructor(message: string, failure: Failure) {
    super(message);
    this.failure = failure;
  }
}

const classify = (err: unknown): Failure =>
  err instanceof AttemptFailure ? err.failure : { retry: false, outcome: "error" };

export async function callJson(metrics: ApiMetrics, call: OutboundCall): Promise<unknown> {
  const policy = new OutboundPolicy({
    target: call.target,
    timeoutMs: call.timeoutMs,
    maxAttempts: call.retries + 1,
    baseDelayMs: 250,
    maxDelayMs: 4_000,
    classify,
    metrics: metrics.outbound,
    timeoutError: () =>
      new AttemptFailure(`${call.target} unreachable or timed out`, { retry: true, outcome: "timeout" }),
  });
  try {
    return await policy.execute(({ signal }) => once(call, signal), { signal: call.signal });
  } catch (err) {
    if (err instanceof AttemptFailure) throw new ScraperError("UPSTREAM_ERROR", [err.message]);
    throw err;
  }
}

async function once(call: OutboundCall, signal: AbortSignal): Promise<unknown> {
  let res: Awaited<ReturnType<typeof fetch>>;
  let text: string;
  try {
    res = await fetch(call.url, {
      method: call.method ?? "GET",
      headers: {
        accept: "application/json",
        ...(call.body ? { "content-type": "application/json" } : {}),
        ...call.headers,
      },
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
      signal,
      ...(call.dispatcher ? { dispatcher: call.dispatcher } : {}),
    });
    text = await res.text();
  } catch (err) {
    if (call.signal?.aborted) throw err;
    throw new AttemptFailure(`${call.target} unreachable or timed out`, { retry: true, outcome: "error" });
  }
  if (res.ok) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new ScraperError("UPSTREAM_ERROR", [`${call.target} answered with invalid JSON`]);
    }
  }
  throw new AttemptFailure(`${call.target} answered HTTP ${res.status}`, {
    retry: isRetryableStatus(res.status),
    outcome: `http_${res.status}`,
    retryAfter: res.headers.get("retry-after"),
  });
}
