// The gateway's Prometheus metrics. Labels carry channel ids (namespace/name) and agent names,
// never keys. Channel ids label counters only (one series per channel and outcome); latency
// histograms are labelled by mode and stream, since a bucket series per channel would multiply
// every channel by every bucket. Request counts and latency per route come from buildBaseApp.
import { Counter, Gauge, Histogram, LATENCY_BUCKETS, outboundMetrics, type Registry } from "@capstan/shared";
import { limiterMetrics } from "@capstan/shared/limiter";

const TOKEN_BUCKETS = [1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 50_000, 200_000];

export function gatewayMetrics(registry: Registry) {
  const registers = [registry];
  return {
    requests: new Counter({
      name: "gateway_chat_requests_total",
      help: "Chat completion requests by channel, agent mode, stream and HTTP status",
      labelNames: ["channel", "mode", "stream", "status"] as const,
      registers,
    }),
    duration: new Histogram({
      name: "gateway_chat_request_duration_seconds",
      help: "Chat completion latency, request received to last byte",
      labelNames: ["mode", "stream"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    ttft: new Histogram({
      name: "gateway_time_to_first_token_seconds",
      help: "Time from request received to the first content sent to the client",
      labelNames: ["mode", "stream"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    upstreamLatency: new Histogram({
      name: "gateway_upstream_duration_seconds",
      help: "LLM provider call latency (to last byte) by agent and outcome",
      labelNames: ["agent", "outcome"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    tokens: new Counter({
      name: "gateway_tokens_total",
      help: "Tokens by channel and kind (prompt, completion)",
      labelNames: ["channel", "kind"] as const,
      registers,
    }),
    tokensPerRequest: new Histogram({
      name: "gateway_completion_tokens",
      help: "Completion tokens per request",
      labelNames: ["mode"] as const,
      buckets: TOKEN_BUCKETS,
      registers,
    }),
    authFailures: new Counter({
      name: "gateway_auth_failures_total",
      help: "Rejected keys by reason (missing_api_key, invalid_api_key, expired_api_key)",
      labelNames: ["reason"] as const,
      registers,
    }),
    limiterRejections: new Counter({
      name: "gateway_limiter_rejections_total",
      help: "Requests rejected with 429 by the QPM limiter, by channel and backend",
      labelNames: ["channel", "backend"] as const,
      registers,
    }),
    // gateway_limiter_decisions_total, _backend_errors_total, _degraded, _duration_seconds; here
    // _degraded is 1 while the QPM is not decided by Redis alone (policy in force, or recovery).
    ...limiterMetrics(registry, "gateway"),
    limiterMode: new Gauge({
      name: "gateway_limiter_mode",
      help: "1 for the limiter's current mode: shared (Redis), fallback (Redis-down policy), recovering, in-process",
      labelNames: ["mode"] as const,
      registers,
    }),
    redisBreakerState: new Gauge({
      name: "gateway_redis_breaker_state",
      help: "1 for the current state of the circuit breaker in front of Redis: closed, open, half_open",
      labelNames: ["state"] as const,
      registers,
    }),
    redisBreakerTransitions: new Counter({
      name: "gateway_redis_breaker_transitions_total",
      help: "Changes of the Redis circuit breaker to open or closed",
      labelNames: ["to"] as const,
      registers,
    }),
    historyWrites: new Counter({
      name: "gateway_history_writes_total",
      help: "Exchanges written to history by outcome (ok: at once, buffered: kept for later, flushed: written from the buffer)",
      labelNames: ["outcome"] as const,
      registers,
    }),
    historyBuffered: new Gauge({
      name: "gateway_history_buffered",
      help: "Exchanges waiting in the history buffer for Redis to return",
      registers,
    }),
    historyDropped: new Counter({
      name: "gateway_history_buffer_dropped_total",
      help: "Exchanges dropped because the history buffer was full (the oldest go first)",
      registers,
    }),
    clientAborts: new Counter({
      name: "gateway_client_disconnects_total",
      help: "Streams ended because the client went away (the upstream call is aborted)",
      labelNames: ["channel"] as const,
      registers,
    }),
    outbound: outboundMetrics(registry, "gateway"),
  };
}

export type GatewayMetrics = ReturnType<typeof gatewayMetrics>;
