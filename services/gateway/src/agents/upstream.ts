// The client of one LLM upstream (an OpenAI-compatible API, Azure OpenAI or Anthropic; where and
// in which shape: wire/index.ts): one POST over a pooled undici Agent, with a timeout per attempt, retries before the first byte by the shared
// resilience policy (connect errors, timeouts, 408/409/429/5xx; bounded, full jitter, Retry-After
// honoured; one longer than retryMaxMs ends the call with the provider's 429 and its Retry-After),
// a GenAI span (provider-span.ts; the undici instrumentation injects its traceparent) and the GenAI
// client metrics (gen_ai_client_operation_duration_seconds and gen_ai_client_token_usage for
// every call, sampled or not), and provider statuses mapped to gateway errors (429 → 429,
// 400/422 → 400, timeout → 504, anything else → 502). Answers come back in OpenAI's shape
// whatever the provider (the target's translation runs before metrics and spans see them).
// Falling to another upstream and circuit breaking are the router's (router.ts).
// Every connection goes through the platform's egress guard (@capstan/shared/egress): a baseURL
// that resolves to loopback, link-local, cluster or private addresses is refused (502
// upstream_refused naming the range) unless CAPSTAN_EGRESS_ALLOWED_HOSTS lists it. A provider's
// error body is never passed to the client (it may be anything the tenant's endpoint chose to
// say, e.g. an internal service's answer): only its status.
// Once a stream has started it is never retried: the client already has part of the answer. The
// attempt timeout is this file's own (AttemptTimeout) rather than the policy's, because a stream's
// must outlive the attempt.
import { EgressGuard, egressRefusal } from "@capstan/shared/egress";
import { type Failure, OutboundPolicy } from "@capstan/shared/resilience";
import { context, trace } from "@opentelemetry/api";
import type { Agent as Dispatcher } from "undici";
import { GatewayError } from "../errors.ts";
import { parseSse } from "../http/sse.ts";
import type { GatewayMetrics } from "../metrics.ts";
import { endProviderSpan, failProviderSpan, startProviderSpan, tracedStream } from "./provider-span.ts";
import type { Usage } from "./types.ts";
import { AttemptTimeout, bufferedRequest } from "./upstream-http.ts";
import type { UpstreamTarget } from "./wire/index.ts";

export interface UpstreamCall {
  target: UpstreamTarget;
  apiKey: string | undefined;
  /** The OpenAI chat body, `model` already the target's. */
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
  /** Non-public hosts, IPs or CIDRs a provider baseURL may reach (the egress allow-list). */
  allowedHosts: readonly string[];
  metrics: GatewayMetrics;
  /** Told of each refused provider address (logged by the app). */
  onBlocked?: (target: string, reason: string) => void;
}

// 529: Anthropic's "overloaded".
const RETRY_STATUSES = new Set([408, 409, 429, 500, 502, 503, 504, 529]);
const TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT"]);

export class ClientGone extends Error {
  constructor() {
    super("client disconnected");
    this.name = "ClientGone";
  }
}

/**
 * error.type of a failed GenAI operation, a bounded set: the gateway's error code
 * (upstream_timeout, upstream_error, upstream_rate_limited, upstream_bad_request, upstream_refused,
 * …), "cancelled" when the client went away, "_OTHER" for anything else.
 */
export function errorTypeOf(err: unknown): string {
  if (err instanceof GatewayError) return err.code;
  if (err instanceof ClientGone) return "cancelled";
  return "_OTHER";
}

function isTimeout(err: unknown): boolean {
  const e = err as { code?: string; name?: string; cause?: { name?: string } };
  return TIMEOUT_CODES.has(e?.code ?? "") || e?.name === "TimeoutError" || e?.cause?.name === "TimeoutError";
}

/** A failed attempt: the gateway error it means, and how the resilience policy sees it. */
class AttemptFailure extends Error {
  readonly error: GatewayError;
  readonly failure: Failure;
  constructor(error: GatewayError, failure: Failure) {
    super(error.message);
    this.error = error;
    this.failure = failure;
  }
}

const classify = (err: unknown): Failure =>
  err instanceof AttemptFailure ? err.failure : { retry: false, outcome: "error" };

/**
 * The gateway error for a provider's non-200 answer: its status only. The body is never echoed:
 * the baseURL is the tenant's choice, and whatever answers there (an internal service, another
 * tenant's endpoint) must not be readable through the gateway's errors.
 */
export function mapUpstreamStatus(status: number, headers: Record<string, string>): GatewayError {
  const detail = `the provider answered HTTP ${status}`;
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

/** Where a provider's chat operation is, parsed once per URL (not per request). */
interface Endpoint {
  origin: string;
  path: string;
  hostname: string;
  port: number;
}

export class UpstreamClient {
  private readonly dispatcher: Dispatcher;
  private readonly opts: UpstreamOptions;
  private readonly endpoints = new Map<string, Endpoint>();
  /** One policy per retry budget (an Agent's maxRetries, 0-5). */
  private readonly policies = new Map<number, OutboundPolicy>();

  constructor(opts: UpstreamOptions) {
    this.opts = opts;
    const guard = new EgressGuard({
      allowedHosts: opts.allowedHosts,
      onBlocked: (_stage, target, reason) => opts.onBlocked?.(target, reason),
    });
    this.dispatcher = guard.agent({ connections: opts.connections, keepAliveTimeout: 30_000, pipelining: 1 });
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }

  private policy(maxRetries: number): OutboundPolicy {
    let p = this.policies.get(maxRetries);
    if (!p) {
      p = new OutboundPolicy({
        target: "llm",
        maxAttempts: maxRetries + 1,
        baseDelayMs: this.opts.retryBaseMs,
        maxDelayMs: this.opts.retryMaxMs,
        retryAfterCapMs: this.opts.retryMaxMs,
        classify,
        metrics: this.opts.metrics.outbound,
      });
      this.policies.set(maxRetries, p);
    }
    return p;
  }

  private endpoint(target: string): Endpoint {
    let e = this.endpoints.get(target);
    if (!e) {
      const url = new URL(target);
      const port = Number(url.port) || (url.protocol === "https:" ? 443 : 80);
      e = { origin: url.origin, path: `${url.pathname}${url.search}`, hostname: url.hostname, port };
      if (this.endpoints.size >= 1024) this.endpoints.clear();
      this.endpoints.set(target, e);
    }
    return e;
  }

  /**
   * One provider call, retries included: its GenAI span (in a sampled trace only) and its GenAI
   * client metrics, to the last byte (a stream: to its end).
   */
  call(call: UpstreamCall): Promise<UpstreamResponse> {
    const started = performance.now();
    const { target } = call;
    const model = target.model;
    const genai = this.opts.metrics.genai.client(model);
    const endpoint = this.endpoint(target.url);
    const span = startProviderSpan(
      { model, hostname: endpoint.hostname, port: endpoint.port, providerName: target.providerName },
      call.body,
    );
    const attempts = span
      ? context.with(trace.setSpan(context.active(), span), () => this.attempts(call))
      : this.attempts(call);
    return attempts.then(
      (res) => {
        if (res.events) {
          const translated = target.stream ? target.stream(res.events, Math.floor(Date.now() / 1000)) : res.events;
          const events = this.measured(translated, genai, started);
          return { ...res, events: span ? tracedStream(span, events, started, errorTypeOf) : events };
        }
        if (res.json && target.response) res.json = target.response(res.json);
        genai.done((performance.now() - started) / 1000, undefined, res.json?.usage as Usage | undefined);
        if (span) endProviderSpan(span, res.json, res.attempts);
        return res;
      },
      (err: Error) => {
        const type = errorTypeOf(err);
        genai.done((performance.now() - started) / 1000, type, undefined);
        if (span) failProviderSpan(span, err, type);
        throw err;
      },
    );
  }

  /** A stream's events passed through; its duration and the usage chunk's tokens recorded at its end. */
  private async *measured(
    events: AsyncGenerator<string>,
    genai: ReturnType<GatewayMetrics["genai"]["client"]>,
    started: number,
  ): AsyncGenerator<string> {
    let usage: Usage | undefined;
    let failure: string | undefined;
    let ended = false;
    try {
      for await (const data of events) {
        // Only the usage chunk holds a usage object (the others say "usage":null or nothing).
        if (data.includes('"usage":{')) {
          try {
            usage = (JSON.parse(data) as { usage?: Usage }).usage;
          } catch {
            // Not JSON: the agent reports the broken event.
          }
        }
        yield data;
      }
      ended = true;
    } catch (err) {
      failure = errorTypeOf(err);
      throw err;
    } finally {
      // Stopped early by its consumer (the client went away): cancelled, not done.
      genai.done((performance.now() - started) / 1000, failure ?? (ended ? undefined : "cancelled"), usage);
    }
  }

  private async attempts(call: UpstreamCall): Promise<UpstreamResponse> {
    const { target } = call;
    const { origin, path } = this.endpoint(target.url);
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: call.stream ? "text/event-stream" : "application/json",
      ...target.headers,
    };
    if (call.apiKey) {
      const [name, value] = target.keyHeader(call.apiKey);
      headers[name] = value;
    }
    const payload = JSON.stringify(target.body(call.body));
    const opts = { origin, path, method: "POST" as const, headers, body: payload };
    try {
      return await this.policy(call.maxRetries).execute(({ attempt }) => this.attempt(call, opts, attempt), {
        signal: call.signal,
      });
    } catch (err) {
      if (call.signal.aborted) throw new ClientGone();
      throw err instanceof AttemptFailure ? err.error : err;
    }
  }

  /** One exchange up to the first byte (a stream) or the last (otherwise). */
  private async attempt(
    call: UpstreamCall,
    base: Omit<Dispatcher.DispatchOptions, "headersTimeout" | "bodyTimeout">,
    attempt: number,
  ): Promise<UpstreamResponse> {
    const { metrics } = this.opts;
    const started = performance.now();
    const timeout = new AttemptTimeout(call.signal, call.timeoutMs);
    const opts = { ...base, headersTimeout: call.timeoutMs, bodyTimeout: call.timeoutMs };
    let status: number;
    let resHeaders: Record<string, string>;
    try {
      if (!call.stream) {
        const res = await bufferedRequest(this.dispatcher, opts, timeout.signal);
        if (res.statusCode === 200) {
          const json = JSON.parse(res.text) as Record<string, unknown>;
          timeout.clear();
          const seconds = (performance.now() - started) / 1000;
          metrics.upstreamLatency.observe({ outcome: "ok" }, seconds);
          return { json, attempts: attempt };
        }
        status = res.statusCode;
        resHeaders = headerRecord(res.headers);
      } else {
        const res = await this.dispatcher.request({ ...opts, signal: timeout.signal });
        if (res.statusCode === 200) return { events: this.events(res.body, call, started, timeout), attempts: attempt };
        status = res.statusCode;
        resHeaders = headerRecord(res.headers);
        // Read to the end so the connection is reused; the text itself is never passed on.
        await res.body.text().catch(() => "");
      }
    } catch (err) {
      timeout.clear();
      if (call.signal.aborted) throw new ClientGone();
      metrics.upstreamLatency.observe({ outcome: "error" }, (performance.now() - started) / 1000);
      const refusal = egressRefusal(err);
      if (refusal) {
        throw new AttemptFailure(new GatewayError("upstream_refused", { rule: refusal.rule }), {
          retry: false,
          outcome: "refused",
        });
      }
      const timedOut = isTimeout(err) || timeout.aborted;
      const error = timedOut
        ? new GatewayError("upstream_timeout", { timeoutMs: call.timeoutMs })
        : new GatewayError("upstream_error", { detail: (err as Error).message || "connection failed" });
      throw new AttemptFailure(error, { retry: true, outcome: timedOut ? "timeout" : "error" });
    }
    timeout.clear();
    metrics.upstreamLatency.observe({ outcome: "error" }, (performance.now() - started) / 1000);
    throw new AttemptFailure(mapUpstreamStatus(status, resHeaders), {
      retry: RETRY_STATUSES.has(status),
      outcome: `http_${status}`,
      retryAfter: resHeaders["retry-after"],
    });
  }

  private async *events(
    body: AsyncIterable<Uint8Array>,
    call: UpstreamCall,
    started: number,
    timeout: AttemptTimeout,
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
      timeout.clear();
      const seconds = (performance.now() - started) / 1000;
      this.opts.metrics.upstreamLatency.observe({ outcome }, seconds);
    }
  }
}
