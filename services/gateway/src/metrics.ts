// The gateway's Prometheus metrics (capstan_gateway_*). Labels never carry keys. Channel ids
// (namespace/name) label a few counters only, through a BoundedLabel: the first
// CHANNEL_LABEL_LIMIT channels seen keep their own series, later ones count under "other", so
// 10,000 channels cannot make 10,000 series per counter. Histograms are labelled by bounded
// values (mode, stream, outcome) only: a bucket series per channel or agent would multiply each by
// every bucket. Request counts and latency per route come from buildBaseApp
// (capstan_gateway_http_*). The GenAI semantic conventions' metrics keep their own names
// (gen_ai_*, genai-metrics.ts).
import {
  BoundedLabel,
  Counter,
  Gauge,
  Histogram,
  LATENCY_BUCKETS,
  outboundMetrics,
  type Registry,
} from "@capstan/shared";
import { limiterMetrics } from "@capstan/shared/limiter";
import { genaiMetrics } from "./genai-metrics.ts";

const TOKEN_BUCKETS = [1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 50_000, 200_000];

/** Distinct channel ids kept as label values on the per-channel counters; the rest are "other". */
export const CHANNEL_LABEL_LIMIT = 1000;

export function gatewayMetrics(registry: Registry, opts: { channelLabelLimit?: number } = {}) {
  const registers = [registry];
  return {
    channelLabel: new BoundedLabel(opts.channelLabelLimit ?? CHANNEL_LABEL_LIMIT),
    requests: new Counter({
      name: "capstan_gateway_chat_requests_total",
      help: "Chat completion requests by agent mode, stream and HTTP status",
      labelNames: ["mode", "stream", "status"] as const,
      registers,
    }),
    channelRequests: new Counter({
      name: "capstan_gateway_channel_requests_total",
      help: `Chat completion requests by channel and HTTP status (channels beyond the first ${opts.channelLabelLimit ?? CHANNEL_LABEL_LIMIT} seen: "other")`,
      labelNames: ["channel", "status"] as const,
      registers,
    }),
    duration: new Histogram({
      name: "capstan_gateway_chat_request_duration_seconds",
      help: "Chat completion latency, request received to last byte",
      labelNames: ["mode", "stream"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    ttft: new Histogram({
      name: "capstan_gateway_time_to_first_token_seconds",
      help: "Time from request received to the first content sent to the client",
      labelNames: ["mode", "stream"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    upstreamLatency: new Histogram({
      name: "capstan_gateway_upstream_duration_seconds",
      help: "LLM provider call latency (to last byte) by outcome",
      labelNames: ["outcome"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    tokens: new Counter({
      name: "capstan_gateway_tokens_total",
      help: "Tokens by channel and kind (prompt, completion)",
      labelNames: ["channel", "kind"] as const,
      registers,
    }),
    tokensPerRequest: new Histogram({
      name: "capstan_gateway_completion_tokens",
      help: "Completion tokens per request",
      labelNames: ["mode"] as const,
      buckets: TOKEN_BUCKETS,
      registers,
    }),
    authFailures: new Counter({
      name: "capstan_gateway_auth_failures_total",
      help: "Rejected keys by reason (missing_api_key, invalid_api_key, expired_api_key)",
      labelNames: ["reason"] as const,
      registers,
    }),
    limiterRejections: new Counter({
      name: "capstan_gateway_limiter_rejections_total",
      help: "Requests rejected with 429 by the QPM limiter, by channel and backend",
      labelNames: ["channel", "backend"] as const,
      registers,
    }),
    // capstan_gateway_limiter_decisions_total, _backend_errors_total, _degraded, _duration_seconds; here
    // _degraded is 1 while the QPM is not decided by Redis alone (policy in force, or recovery).
    ...limiterMetrics(registry, "capstan_gateway"),
    limiterMode: new Gauge({
      name: "capstan_gateway_limiter_mode",
      help: "1 for the limiter's current mode: shared (Redis), fallback (Redis-down policy), recovering, in-process",
      labelNames: ["mode"] as const,
      registers,
    }),
    redisBreakerState: new Gauge({
      name: "capstan_gateway_redis_breaker_state",
      help: "1 for the current state of the circuit breaker in front of Redis: closed, open, half_open",
      labelNames: ["state"] as const,
      registers,
    }),
    redisBreakerTransitions: new Counter({
      name: "capstan_gateway_redis_breaker_transitions_total",
      help: "Changes of the Redis circuit breaker to open or closed",
      labelNames: ["to"] as const,
      registers,
    }),
    historyWrites: new Counter({
      name: "capstan_gateway_history_writes_total",
      help: "Exchanges written to history by outcome (ok: at once, buffered: kept for later, flushed: written from the buffer)",
      labelNames: ["outcome"] as const,
      registers,
    }),
    historyBuffered: new Gauge({
      name: "capstan_gateway_history_buffered",
      help: "Exchanges waiting in the history buffer for Redis to return",
      registers,
    }),
    historyDropped: new Counter({
      name: "capstan_gateway_history_buffer_dropped_total",
      help: "Exchanges dropped because the history buffer was full (the oldest go first)",
      registers,
    }),
    tokenRejections: new Counter({
      name: "capstan_gateway_token_rejections_total",
      help: "Requests refused by a channel's token limits, by channel and reason (tpm, budget)",
      labelNames: ["channel", "reason"] as const,
      registers,
    }),
    usageWrites: new Counter({
      name: "capstan_gateway_usage_writes_total",
      help: "Token accounting writes to Redis at the end of requests (ok, dropped: Redis could not take it)",
      labelNames: ["outcome"] as const,
      registers,
    }),
    // Several upstreams per Agent (agents/router.ts): the agent label is bounded like the channel's.
    agentLabel: new BoundedLabel(opts.channelLabelLimit ?? CHANNEL_LABEL_LIMIT),
    upstreamCircuit: new Gauge({
      name: "capstan_gateway_upstream_circuit_state",
      help: "1 for the current state of each upstream's circuit breaker (closed, open, half_open), by agent and upstream",
      labelNames: ["agent", "upstream", "state"] as const,
      registers,
    }),
    upstreamServed: new Counter({
      name: "capstan_gateway_upstream_requests_total",
      help: "Chat requests answered by each upstream of an agent (after fallback)",
      labelNames: ["agent", "upstream"] as const,
      registers,
    }),
    upstreamFallbacks: new Counter({
      name: "capstan_gateway_upstream_fallbacks_total",
      help: "Requests that left an upstream for the next one, by the reason (the error code, or circuit_open)",
      labelNames: ["agent", "upstream", "reason"] as const,
      registers,
    }),
    clientAborts: new Counter({
      name: "capstan_gateway_client_disconnects_total",
      help: "Streams ended because the client went away (the upstream call is aborted)",
      labelNames: ["channel"] as const,
      registers,
    }),
    outbound: outboundMetrics(registry, "capstan_gateway"),
    // gen_ai_client_* and gen_ai_server_*: the OpenTelemetry GenAI conventions' names (genai-metrics.ts).
    genai: genaiMetrics(registry),
  };
}

export type GatewayMetrics = ReturnType<typeof gatewayMetrics>;
