// The client of an OpenAI-compatible provider: POST {baseURL}/chat/completions over a pooled
// undici Agent, with a timeout per attempt, bounded retries with jittered backoff before the first
// byte (connect errors, timeouts, 408/409/429/5xx; Retry-After honoured up to the cap), the W3C
// traceparent of the current span, and provider statuses mapped to gateway errors
// (429 → 429, 400/422 → 400, timeout → 504, anything else → 502). Once a stream has started it is
// never retried: the client already has part of the answer.
import { context, propagation, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { Agent as Dispatcher, request } from "undici";
import { GatewayError } from "../errors.ts";
import { parseSse } from "../http/sse.ts";
import type { GatewayMetrics } from "../metrics.ts";

export interface UpstreamCall {
  baseURL: string;
  apiKey: string | undefined;
  body: Record<string, unknown>;
  stream: boolean;
  timeoutMs: number;
  maxRetries: number;
  signal: AbortSignal;
  /** Metric label: namespace/agent. */
  agent: string;
}

export interface UpstreamOptions {
  retryBaseMs: number;
  retryMaxMs: number;
  connections: number;
  metrics: GatewayMetrics;
}

const RETRY_STATUSES = new Set([408, 409, 429, 500, 502, 503, 504]);
const TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT"]);

export class ClientGone extends Error {
  constructor() {
    super("client disconnected");
    this.name = "ClientGone";
  }
}

function isTimeout(err: unknown): boolean {
  const e = err as { code?: string; name?: string; cause?: { name?: string } };
  return TIMEOUT_CODES.has(e?.code ?? "") || e?.name === "TimeoutError" || e?.cause?.name === "TimeoutError";
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new ClientGone());
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ClientGone());
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Provider error text, trimmed; never includes our request (which may carry a key). */
function upstreamMessage(status: number, text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const msg =
      typeof parsed.error === "string" ? parsed.error : (parsed.error?.message ?? parsed.message ?? undefined);
    if (typeof msg === "string" && msg) return `${status} ${msg.slice(0, 500)}`;
  } catch {
    // not JSON: fall through
  }
  return `${status} ${text.slice(0, 200).trim() || "(no body)"}`;
}

export function mapUpstreamStatus(status: number, text: string, headers: Record<string, string>): GatewayError {
  const detail = upstreamMessage(status, text);
  if (status === 429) {
    const retryAfter = headers["retry-after"];
    return new GatewayError(
      "upstream_rate_limited",
      { detail },
      retryAfter ? { headers: { "retry-after": retryAfter } } : {},
    );
  }
  if (status === 400 || status === 422) return new GatewayError("upstream_bad_request", { detail });
  return new GatewayError("upstream_error", { detail });
}

function headerRecord(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : v;
  return out;
}

export interface UpstreamResponse {
  /** Parsed JSON (non-stream). */
  json?: Record<string, unknown>;
  /** Event data strings (stream), ending before [DONE]. */
  events?: AsyncGenerator<string>;
  attempts: number;
}

export class UpstreamClient {
  private readonly dispatcher: Dispatcher;
  private readonly opts: UpstreamOptions;

  constructor(opts: UpstreamOptions) {
    this.opts = opts;
    this.dispatcher = new Dispatcher({ connections: opts.connections, keepAliveTimeout: 30_000, pipelining: 1 });
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }

  private backoff(attempt: number, retryAfter: string | undefined): number {
    const hinted = retryAfter && /^\d+(\.\d+)?$/.test(retryAfter) ? Number(retryAfter) * 1000 : undefined;
    const exp = this.opts.retryBaseMs * 2 ** attempt;
    const jittered = exp / 2 + Math.random() * (exp / 2);
    return Math.min(this.opts.retryMaxMs, hinted ?? jittered);
  }

  /** One provider call in an "upstream" client span (to the last byte, or to the first for streams). */
  call(call: UpstreamCall): Promise<UpstreamResponse> {
    const span = trace.getTracer("capstan-gateway").startSpan("upstream", { kind: SpanKind.CLIENT });
    span.setAttribute("server.address", new URL(call.baseURL).host);
    span.setAttribute("gen_ai.request.model", String(call.body.model));
    return context
      .with(trace.setSpan(context.active(), span), () => this.attempts(call))
      .then(
        (res) => {
          span.setAttribute("capstan.upstream.attempts", res.attempts);
          span.end();
          return res;
        },
        (err: Error) => {
          span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
          span.end();
          throw err;
        },
      );
  }

  private async attempts(call: UpstreamCall): Promise<UpstreamResponse> {
    const { metrics } = this.opts;
    const url = `${call.baseURL.replace(/\/+$/, "")}/chat/completions`;
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: call.stream ? "text/event-stream" : "application/json",
    };
    if (call.apiKey) headers.authorization = `Bearer ${call.apiKey}`;
    propagation.inject(context.active(), headers);
    const payload = JSON.stringify(call.body);
    let lastError: GatewayError | undefined;
    for (let attempt = 0; attempt <= call.maxRetries; attempt++) {
      if (attempt > 0) metrics.outbound.retries.inc({ target: "llm" });
      const started = performance.now();
      const timeout = AbortSignal.timeout(call.timeoutMs);
      const signal = AbortSignal.any([call.signal, timeout]);
      let retryAfter: string | undefined;
      try {
        const res = await request(url, {
          method: "POST",
          headers,
          body: payload,
          signal,
          dispatcher: this.dispatcher,
          headersTimeout: call.timeoutMs,
          bodyTimeout: call.timeoutMs,
        });
        const resHeaders = headerRecord(res.headers);
        if (res.statusCode === 200) {
          if (!call.stream) {
            const json = (await res.body.json()) as Record<string, unknown>;
            const seconds = (performance.now() - started) / 1000;
            metrics.outbound.calls.inc({ target: "llm", outcome: "ok" });
            metrics.outbound.latency.observe({ target: "llm" }, seconds);
            metrics.upstreamLatency.observe({ agent: call.agent, outcome: "ok" }, seconds);
            return { json, attempts: attempt + 1 };
          }
          metrics.outbound.calls.inc({ target: "llm", outcome: "ok" });
          return { events: this.events(res.body, call, started, timeout), attempts: attempt + 1 };
        }
        const text = await res.body.text().catch(() => "");
        metrics.outbound.calls.inc({ target: "llm", outcome: `http_${res.statusCode}` });
        metrics.upstreamLatency.observe({ agent: call.agent, outcome: "error" }, (performance.now() - started) / 1000);
        lastError = mapUpstreamStatus(res.statusCode, text, resHeaders);
        if (!RETRY_STATUSES.has(res.statusCode)) throw lastError;
        retryAfter = resHeaders["retry-after"];
      } catch (err) {
        if (err instanceof GatewayError) throw err;
        if (call.signal.aborted) throw new ClientGone();
        const timedOut = isTimeout(err) || timeout.aborted;
        metrics.outbound.calls.inc({ target: "llm", outcome: timedOut ? "timeout" : "error" });
        metrics.upstreamLatency.observe({ agent: call.agent, outcome: "error" }, (performance.now() - started) / 1000);
        lastError = timedOut
          ? new GatewayError("upstream_timeout", { timeoutMs: call.timeoutMs })
          : new GatewayError("upstream_error", { detail: (err as Error).message || "connection failed" });
      }
      if (attempt < call.maxRetries) await sleep(this.backoff(attempt, retryAfter), call.signal);
    }
    throw lastError ?? new GatewayError("upstream_error", { detail: "no attempt made" });
  }

  private async *events(
    body: AsyncIterable<Uint8Array>,
    call: UpstreamCall,
    started: number,
    timeout: AbortSignal,
  ): AsyncGenerator<string> {
    let outcome = "ok";
    try {
      for await (const data of parseSse(body)) {
        if (data === "[DONE]") return;
        yield data;
      }
    } catch (err) {
      if (call.signal.aborted) {
        outcome = "client_gone";
        throw new ClientGone();
      }
      outcome = "error";
      if (isTimeout(err) || timeout.aborted) throw new GatewayError("upstream_timeout", { timeoutMs: call.timeoutMs });
      throw new GatewayError("upstream_error", { detail: `stream broken: ${(err as Error).message}` });
    } finally {
      const seconds = (performance.now() - started) / 1000;
      this.opts.metrics.outbound.latency.observe({ target: "llm" }, seconds);
      this.opts.metrics.upstreamLatency.observe({ agent: call.agent, outcome }, seconds);
    }
  }
}
