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
  LATENCY_BUCKETS,
  type MetricFamilies,
  metricFamilies,
  outboundMetrics,
  type Registry,
} from "@capstan/shared";
import { limiterMetrics } from "@capstan/shared/limiter";
import { genaiMetrics } from "./genai-metrics.ts";

const TOKEN_BUCKETS = [1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 50_000, 200_000];

/** Distinct channel ids kept as label values on the per-channel counters; the rest are "other". */
export const CHANNEL_LABEL_LIMIT = 1000;

/** Chat requests: counts, latency, time to first token, tokens, abandoned streams. */
function chatMetrics(m: MetricFamilies, channelLabelLimit: number) {
  return {
    requests: m.counter(
      "capstan_gateway_chat_requests_total",
      "Chat completion requests by agent mode, stream and HTTP status",
      ["mode", "stream", "status"],
    ),
    channelRequests: m.counter(
      "capstan_gateway_channel_requests_total",
      `Chat completion requests by channel and HTTP status (channels beyond the first ${channelLabelLimit} seen: "other")`,
      ["channel", "status"],
    ),
    duration: m.histogram(
      "capstan_gateway_chat_request_duration_seconds",
      "Chat completion latency, request received to last byte",
      ["mode", "stream"],
      LATENCY_BUCKETS,
    ),
    ttft: m.histogram(
      "capstan_gateway_time_to_first_token_seconds",
      "Time from request received to the first content sent to the client",
      ["mode", "stream"],
      LATENCY_BUCKETS,
    ),
    upstreamLatency: m.histogram(
      "capstan_gateway_upstream_duration_seconds",
      "LLM provider call latency (to last byte) by outcome",
      ["outcome"],
      LATENCY_BUCKETS,
    ),
    tokens: m.counter("capstan_gateway_tokens_total", "Tokens by channel and kind (prompt, completion)", [
      "channel",
      "kind",
    ]),
    tokensPerRequest: m.histogram(
      "capstan_gateway_completion_tokens",
      "Completion tokens per request",
      ["mode"],
      TOKEN_BUCKETS,
    ),
    clientAborts: m.counter(
      "capstan_gateway_client_disconnects_total",
      "Streams ended because the client went away (the upstream call is aborted)",
      ["channel"],
    ),
  };
}

/** Admission: keys refused, the QPM limiter and the circuit breaker in front of Redis, token limits and usage writes. */
function admissionMetrics(registry: Registry, m: MetricFamilies) {
  return {
    // capstan_gateway_limiter_decisions_total, _backend_errors_total, _degraded, _duration_seconds; here
    // _degraded is 1 while the QPM is not decided by Redis alone (policy in force, or recovery).
    ...limiterMetrics(registry, "capstan_gateway"),
    authFailures: m.counter(
      "capstan_gateway_auth_failures_total",
      "Rejected keys by reason (missing_api_key, invalid_api_key, expired_api_key)",
      ["reason"],
    ),
    limiterRejections: m.counter(
      "capstan_gateway_limiter_rejections_total",
      "Requests rejected with 429 by the QPM limiter, by channel and backend",
      ["channel", "backend"],
    ),
    limiterMode: m.gauge(
      "capstan_gateway_limiter_mode",
      "1 for the limiter's current mode: shared (Redis), fallback (Redis-down policy), recovering, in-process",
      ["mode"],
    ),
    redisBreakerState: m.gauge(
      "capstan_gateway_redis_breaker_state",
      "1 for the current state of the circuit breaker in front of Redis: closed, open, half_open",
      ["state"],
    ),
    redisBreakerTransitions: m.counter(
      "capstan_gateway_redis_breaker_transitions_total",
      "Changes of the Redis circuit breaker to open or closed",
      ["to"],
    ),
    tokenRejections: m.counter(
      "capstan_gateway_token_rejections_total",
      "Requests refused by a channel's token limits, by channel and reason (tpm, budget)",
      ["channel", "reason"],
    ),
    usageWrites: m.counter(
      "capstan_gateway_usage_writes_total",
      "Token accounting writes to Redis at the end of requests (ok, dropped: Redis could not take it)",
      ["outcome"],
    ),
  };
}

/** Conversation history writes and the buffer kept while Redis is away. */
function historyMetrics(m: MetricFamilies) {
  return {
    historyWrites: m.counter(
      "capstan_gateway_history_writes_total",
      "Exchanges written to history by outcome (ok: at once, buffered: kept for later, flushed: written from the buffer)",
      ["outcome"],
    ),
    historyBuffered: m.gauge(
      "capstan_gateway_history_buffered",
      "Exchanges waiting in the history buffer for Redis to return",
    ),
    historyDropped: m.counter(
      "capstan_gateway_history_buffer_dropped_total",
      "Exchanges dropped because the history buffer was full (the oldest go first)",
    ),
  };
}

/** Each Agent's upstreams (agents/router.ts): breaker state, answers and fallbacks. */
function upstreamMetrics(m: MetricFamilies) {
  return {
    upstreamCircuit: m.gauge(
      "capstan_gateway_upstream_circuit_state",
      "1 for the current state of each upstream's circuit breaker (closed, open, half_open), by agent and upstream",
      ["agent", "upstream", "state"],
    ),
    upstreamServed: m.counter(
      "capstan_gateway_upstream_requests_total",
      "Chat requests answered by each upstream of an agent (after fallback)",
      ["agent", "upstream"],
    ),
    upstreamFallbacks: m.counter(
      "capstan_gateway_upstream_fallbacks_total",
      "Requests that left an upstream for the next one, by the reason (the error code, or circuit_open)",
      ["agent", "upstream", "reason"],
    ),
  };
}

export function gatewayMetrics(registry: Registry, opts: { channelLabelLimit?: number } = {}) {
  const m = metricFamilies(registry);
  const channelLabelLimit = opts.channelLabelLimit ?? CHANNEL_LABEL_LIMIT;
  return {
    channelLabel: new BoundedLabel(channelLabelLimit),
    // Several upstreams per Agent (agents/router.ts): the agent label is bounded like the channel's.
    agentLabel: new BoundedLabel(channelLabelLimit),
    ...chatMetrics(m, channelLabelLimit),
    ...admissionMetrics(registry, m),
    ...historyMetrics(m),
    ...upstreamMetrics(m),
    outbound: outboundMetrics(registry, "capstan_gateway"),
    // gen_ai_client_* and gen_ai_server_*: the OpenTelemetry GenAI conventions' names (genai-metrics.ts).
    genai: genaiMetrics(registry),
  };
}

export type GatewayMetrics = ReturnType<typeof gatewayMetrics>;
