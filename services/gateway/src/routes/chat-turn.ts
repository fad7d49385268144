// One chat request as the route handles it (a "turn"): what it needs from start to end, how it
// starts (the agent, its span, the client's disconnect, the channel's token limits) and how it is
// recorded when it ends, however it ends: metrics, the channel's token accounting (TPM
// correction, budget spend, hourly usage per agent, upstream and model) and the kept history.
import { randomUUID } from "node:crypto";
import type { Agent } from "@capstan/shared/api";
import { context, type Span, trace } from "@opentelemetry/api";
import type { FastifyReply, FastifyRequest } from "fastify";
import { countPromptTokens } from "../agents/tokens.ts";
import type { AgentContext, ChatAgent, Usage } from "../agents/types.ts";
import type { ResolvedChannel } from "../channels.ts";
import type { ChatRequest } from "../chat-request.ts";
import { GatewayError } from "../errors.ts";
import type { ExchangeRecord, HistoryStore } from "../history/store.ts";
import { startAgentSpan } from "../http/agent-span.ts";
import type { Drain } from "../http/drain.ts";
import type { Reservation, TokenAccounts, TokenLimits } from "../limiter/token-limiter.ts";
import type { GatewayMetrics } from "../metrics.ts";
import type { RedisBreaker } from "../redis/breaker.ts";

/** chatcmpl- + 32 hex characters (randomUUID draws from a cached entropy pool: no syscall per id). */
export function completionId(): string {
  return `chatcmpl-${randomUUID().replaceAll("-", "")}`;
}

export interface ChatRouteOptions {
  history: HistoryStore;
  /** The circuit breaker in front of Redis (absent without Redis): it counts history outcomes. */
  breaker: RedisBreaker | undefined;
  /** Graceful stop: open requests are cut at the end of the drain window. */
  drain: Drain;
  metrics: GatewayMetrics;
  /** TPM, budgets and hourly usage per channel. */
  tokens: TokenAccounts;
  agentFor(agent: Agent): ChatAgent;
}

export interface Turn {
  req: FastifyRequest;
  reply: FastifyReply;
  channel: ResolvedChannel;
  parsed: ChatRequest;
  impl: ChatAgent;
  ctx: AgentContext;
  abort: AbortController;
  id: string;
  created: number;
  model: string;
  started: number;
  firstTokenAt: number | null;
  labels: { mode: string; stream: string };
  limits: TokenLimits;
  reservation: Reservation | undefined;
  /** The agent step's span, in a sampled trace only. */
  span: Span | undefined;
  /** Runs fn in the agent span's context (or as is without one). */
  inSpan<T>(fn: () => T): T;
}

/** A turn for an authenticated, validated request: its token limits checked first (429 if spent). */
export async function startTurn(
  gateway: ChatRouteOptions,
  req: FastifyRequest,
  reply: FastifyReply,
  started: number,
): Promise<Turn> {
  const channel = req.capstan?.channel;
  if (!channel) throw new GatewayError("invalid_api_key");
  const parsed = req.body as ChatRequest;
  const agent = channel.agent;
  if (!agent) {
    req.log.warn({ channel: channel.id, agent: channel.agentName }, "channel's agent not found");
    throw new GatewayError("agent_not_found");
  }
  const limits: TokenLimits = { id: channel.id, tpm: channel.tpm, budget: channel.budget };
  const reservation =
    limits.tpm || limits.budget
      ? await gateway.tokens.admit(limits, await countPromptTokens(parsed.messages))
      : undefined;
  if (reservation?.tpm) {
    reply.header("x-ratelimit-limit-tokens", String(reservation.tpm.limit));
    reply.header("x-ratelimit-remaining-tokens", String(reservation.tpm.remaining));
  }
  const impl = gateway.agentFor(agent);
  const abort = new AbortController();
  reply.raw.on("close", () => {
    if (!reply.raw.writableFinished) abort.abort();
  });
  const span = startAgentSpan(agent, impl.mode, parsed, context.active());
  const spanCtx = span ? trace.setSpan(context.active(), span) : undefined;
  return {
    req,
    reply,
    channel,
    parsed,
    impl,
    ctx: { request: parsed, channel, agent, signal: abort.signal },
    abort,
    id: completionId(),
    created: Math.floor(Date.now() / 1000),
    model: channel.agentName,
    started,
    firstTokenAt: null,
    labels: { mode: impl.mode, stream: String(parsed.stream === true) },
    limits,
    reservation,
    span,
    inSpan: (fn) => (spanCtx ? context.with(spanCtx, fn) : fn()),
  };
}

/** The first content reached the client: time to first token. */
export function firstToken(gateway: ChatRouteOptions, turn: Turn): void {
  turn.firstTokenAt = performance.now();
  const seconds = (turn.firstTokenAt - turn.started) / 1000;
  gateway.metrics.ttft.observe(turn.labels, seconds);
  gateway.metrics.genai.server.firstToken(seconds);
}

/**
 * Records a turn that ended: metrics, token accounting, history (when the channel keeps it).
 * `counted`: the tokens to account when the answer carries no usage (a stream cut short).
 */
export function recordTurn(
  gateway: ChatRouteOptions,
  turn: Turn,
  outcome: Partial<ExchangeRecord>,
  counted?: Usage,
): void {
  const { metrics } = gateway;
  const { channel, req } = turn;
  const end = performance.now();
  metrics.duration.observe(turn.labels, (end - turn.started) / 1000);
  metrics.genai.server.done((end - turn.started) / 1000, outcome.error?.code);
  const usage = outcome.usage ?? undefined;
  if (usage) {
    const label = metrics.channelLabel.value(channel.id);
    metrics.tokens.inc({ channel: label, kind: "prompt" }, usage.prompt_tokens);
    metrics.tokens.inc({ channel: label, kind: "completion" }, usage.completion_tokens);
    metrics.tokensPerRequest.observe({ mode: turn.labels.mode }, usage.completion_tokens);
  }
  const served = turn.ctx.served;
  gateway.tokens.settle(turn.limits, turn.reservation, usage ?? counted, {
    agent: channel.agentName,
    upstream: served?.upstream ?? "-",
    model: served?.model ?? turn.labels.mode,
  });
  if (!channel.keepHistory) return;
  const entry: ExchangeRecord = {
    id: turn.id,
    channel: channel.id,
    agent: channel.agentName,
    mode: turn.labels.mode,
    created: Date.now() - Math.round(end - turn.started),
    stream: turn.parsed.stream === true,
    status: 200,
    messages: turn.parsed.messages,
    answer: null,
    finishReason: null,
    usage: null,
    ...outcome,
    timings: {
      totalMs: Math.round(end - turn.started),
      firstTokenMs: turn.firstTokenAt === null ? null : Math.round(turn.firstTokenAt - turn.started),
    },
  };
  // With Redis, the buffered store counts its own outcomes and logs once per state change.
  gateway.history.append(channel.id, entry).then(
    () => {
      if (!gateway.breaker) metrics.historyWrites.inc({ outcome: "ok" });
    },
    (err: Error) => {
      metrics.historyWrites.inc({ outcome: "error" });
      req.log.warn({ err: err.message, channel: channel.id }, "history write failed");
    },
  );
}
