// POST /api/v1/chat/completions, as a plugin registered inside /api/v1 (auth and QPM hooks run
// in onRequest there), then validation (the route's schema), then the agent.
// Non-stream answers are one chat.completion; streams are chat.completion.chunk events (the first
// delta of a choice carries the role, the last carries finish_reason, then the usage chunk when
// stream_options.include_usage, then [DONE]). Errors before the first byte get their HTTP status;
// an error after it is sent as an OpenAI error event and the stream ends without [DONE].
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import type { Agent } from "@capstan/shared/api";
import { context, trace } from "@opentelemetry/api";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import {
  type AgentContext,
  type ChatAgent,
  type Citation,
  type Completion,
  modeOf,
  type StreamPiece,
  type Usage,
} from "../agents/types.ts";
import { ClientGone, errorTypeOf } from "../agents/upstream.ts";
import { type ChatRequest, chatRequest, parseChatRequest } from "../chat-request.ts";
import { GatewayError } from "../errors.ts";
import type { ExchangeRecord, HistoryStore } from "../history/store.ts";
import { endAgentSpan, startAgentSpan } from "../http/agent-span.ts";
import type { Drain } from "../http/drain.ts";
import { inRequestContext } from "../http/request-context.ts";
import { chatCompletion, chatCompletionStream, errorResponses } from "../http/schemas.ts";
import { SSE_DONE, sseData } from "../http/sse.ts";
import type { GatewayMetrics } from "../metrics.ts";
import type { RedisBreaker } from "../redis/breaker.ts";

/** chatcmpl- + 32 hex characters (randomUUID draws from a cached entropy pool: no syscall per id). */
export function completionId(): string {
  return `chatcmpl-${randomUUID().replaceAll("-", "")}`;
}

interface Exchange {
  id: string;
  created: number;
  model: string;
  started: number;
  firstTokenAt: number | null;
  labels: { channel: string; mode: string; stream: string };
}

export interface ChatRouteOptions {
  history: HistoryStore;
  /** The circuit breaker in front of Redis (absent without Redis): it counts history outcomes. */
  breaker: RedisBreaker | undefined;
  /** Graceful stop: open requests are cut at the end of the drain window. */
  drain: Drain;
  metrics: GatewayMetrics;
  agentFor(agent: Agent): ChatAgent;
}

/** The route's body validator: the fast path for common requests, else the schema (400 naming the param). */
function chatBodyValidator() {
  return (body: unknown) => {
    try {
      return { value: parseChatRequest(body) };
    } catch (err) {
      return { error: err as Error };
    }
  };
}

export const chatRoutes: FastifyPluginAsync<ChatRouteOptions> = async (app, gateway) => {
  const { metrics } = gateway;

  app.addHook("onResponse", async (req, reply) => {
    const channel = req.capstan?.channel;
    const status = String(reply.statusCode);
    metrics.requests.inc({
      mode: channel?.agent ? modeOf(channel.agent) : "-",
      stream: String((req.body as { stream?: unknown } | undefined)?.stream === true),
      status,
    });
    if (channel) metrics.channelRequests.inc({ channel: metrics.channelLabel.value(channel.id), status });
  });

  function record(ex: Exchange, req: FastifyRequest, parsed: ChatRequest, outcome: Partial<ExchangeRecord>): void {
    const channel = req.capstan?.channel;
    const end = performance.now();
    metrics.duration.observe({ mode: ex.labels.mode, stream: ex.labels.stream }, (end - ex.started) / 1000);
    metrics.genai.server.done((end - ex.started) / 1000, outcome.error?.code);
    const usage = outcome.usage;
    if (channel && usage) {
      const label = metrics.channelLabel.value(channel.id);
      metrics.tokens.inc({ channel: label, kind: "prompt" }, usage.prompt_tokens);
      metrics.tokens.inc({ channel: label, kind: "completion" }, usage.completion_tokens);
      metrics.tokensPerRequest.observe({ mode: ex.labels.mode }, usage.completion_tokens);
    }
    if (!channel?.keepHistory) return;
    const entry: ExchangeRecord = {
      id: ex.id,
      channel: channel.id,
      agent: channel.agentName,
      mode: ex.labels.mode,
      created: Date.now() - Math.round(end - ex.started),
      stream: parsed.stream === true,
      status: 200,
      messages: parsed.messages,
      answer: null,
      finishReason: null,
      usage: null,
      ...outcome,
      timings: {
        totalMs: Math.round(end - ex.started),
        firstTokenMs: ex.firstTokenAt === null ? null : Math.round(ex.firstTokenAt - ex.started),
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

  app.withTypeProvider<ZodTypeProvider>().post(
    "/chat/completions",
    {
      schema: {
        operationId: "createChatCompletion",
        summary: "Run the agent bound to the key (OpenAI chat completions)",
        tags: ["chat"],
        security: [{ channelKey: [] }],
        body: chatRequest,
        response: {
          200: {
            description: "The answer: one chat.completion, or with stream: true server-sent chunk events",
            content: {
              "application/json": { schema: chatCompletion },
              "text/event-stream": { schema: chatCompletionStream },
            },
          },
          ...errorResponses(400, 401, 413, 415, 429, 500, 502, 503, 504),
        },
      },
      validatorCompiler: chatBodyValidator,
    },
    (req, reply) => inRequestContext(req, () => handle(req, reply)),
  );

  // The client went away before the answer: the upstream call was aborted; nobody reads this reply
  // (499 is the de-facto "client closed request" status, so metrics tell it apart from errors).
  function clientGone(req: FastifyRequest, reply: FastifyReply, channel: string) {
    metrics.clientAborts.inc({ channel: metrics.channelLabel.value(channel) });
    req.log.info({ channel }, "client disconnected before the answer; upstream call aborted");
    return reply.code(499).send();
  }

  async function handle(req: FastifyRequest, reply: FastifyReply) {
    const started = performance.now();
    const channel = req.capstan?.channel;
    if (!channel) throw new GatewayError("invalid_api_key");
    const parsed = req.body as ChatRequest;
    const agent = channel.agent;
    if (!agent) {
      req.log.warn({ channel: channel.id, agent: channel.agentName }, "channel's agent not found");
      throw new GatewayError("agent_not_found");
    }
    const impl = gateway.agentFor(agent);
    const abort = new AbortController();
    reply.raw.on("close", () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    const ctx: AgentContext = { request: parsed, channel, agent, signal: abort.signal };
    const ex: Exchange = {
      id: completionId(),
      created: Math.floor(Date.now() / 1000),
      model: channel.agentName,
      started,
      firstTokenAt: null,
      labels: { channel: channel.id, mode: impl.mode, stream: String(parsed.stream === true) },
    };
    // The agent step's span, in a sampled trace only; without one the agent runs in the request's context.
    const span = startAgentSpan(agent, impl.mode, parsed, context.active());
    const spanCtx = span ? trace.setSpan(context.active(), span) : undefined;
    const inSpan = <T>(fn: () => T): T => (spanCtx ? context.with(spanCtx, fn) : fn());
    /** The agent failed before the first byte: end the span, record the error, answer it. */
    const failed = (err: unknown) => {
      if (span)
        endAgentSpan(span, {
          id: ex.id,
          finishReasons: [],
          usage: null,
          error: { type: errorTypeOf(err), message: (err as Error).message },
        });
      if (err instanceof ClientGone) return clientGone(req, reply, channel.id);
      if (err instanceof GatewayError)
        record(ex, req, parsed, { status: err.status, error: { code: err.code, message: err.message } });
      throw err;
    };

    const open = gateway.drain.track();
    reply.raw.once("close", open.done);
    if (parsed.stream !== true) {
      let completion: Completion;
      try {
        const answer = inSpan(() => impl.complete(ctx));
        const first = await Promise.race([answer, open.cut]);
        if (first === "cut") {
          // The drain window is over and the answer is not: a 503 the SDKs retry elsewhere.
          abort.abort();
          answer.catch(() => {});
          throw new GatewayError("server_shutting_down");
        }
        completion = first;
      } catch (err) {
        return failed(err);
      }
      ex.firstTokenAt = performance.now();
      metrics.ttft.observe({ mode: ex.labels.mode, stream: ex.labels.stream }, (ex.firstTokenAt - started) / 1000);
      metrics.genai.server.firstToken((ex.firstTokenAt - started) / 1000);
      if (span)
        endAgentSpan(span, {
          id: ex.id,
          finishReasons: completion.choices.flatMap((c) => (c.finish_reason ? [c.finish_reason] : [])),
          usage: completion.usage,
        });
      const first = completion.choices[0];
      record(ex, req, parsed, {
        answer: first?.message.content ?? null,
        finishReason: first?.finish_reason ?? null,
        usage: completion.usage,
        ...(completion.citations ? { citations: completion.citations } : {}),
      });
      return reply.send({
        id: ex.id,
        object: "chat.completion",
        created: ex.created,
        model: ex.model,
        choices: completion.choices,
        usage: completion.usage,
        system_fingerprint: null,
        ...(completion.citations ? { citations: completion.citations } : {}),
      });
    }

    const iterator = impl.stream(ctx)[Symbol.asyncIterator]();
    /** The agent's next piece, or "cut" when the drain window ends first. */
    const next = (): Promise<IteratorResult<StreamPiece> | "cut"> =>
      Promise.race([inSpan(() => iterator.next()), open.cut]);
    let first: IteratorResult<StreamPiece>;
    try {
      const step = await next();
      if (step === "cut") {
        abort.abort();
        throw new GatewayError("server_shutting_down");
      }
      first = step;
    } catch (err) {
      return failed(err);
    }
    reply.headers({
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "x-accel-buffering": "no",
    });
    const includeUsage = parsed.stream_options?.include_usage === true;
    const frames = async function* (): AsyncGenerator<string> {
      const roleSent = new Set<number>();
      let citations: Citation[] | undefined;
      let usage: Usage | undefined;
      let answer = "";
      let finishReason: string | null = null;
      // Each choice's finish reason, for the span (a sampled request's only).
      const reasons: string[] | undefined = span ? [] : undefined;
      let failure: GatewayError | undefined;
      const base = () => ({
        id: ex.id,
        object: "chat.completion.chunk",
        created: ex.created,
        model: ex.model,
        system_fingerprint: null,
      });
      try {
        let step = first;
        while (!step.done) {
          const piece = step.value;
          if (piece.kind === "citations") citations = piece.citations;
          else if (piece.kind === "usage") usage = piece.usage;
          else {
            const delta = roleSent.has(piece.index) ? piece.delta : { role: "assistant", ...piece.delta };
            roleSent.add(piece.index);
            if (piece.index === 0 && typeof piece.delta.content === "string") answer += piece.delta.content;
            if (ex.firstTokenAt === null && (piece.delta.content || piece.delta.tool_calls)) {
              ex.firstTokenAt = performance.now();
              metrics.ttft.observe(
                { mode: ex.labels.mode, stream: ex.labels.stream },
                (ex.firstTokenAt - started) / 1000,
              );
              metrics.genai.server.firstToken((ex.firstTokenAt - started) / 1000);
            }
            if (piece.finish_reason && piece.index === 0) finishReason = piece.finish_reason;
            if (reasons && piece.finish_reason) reasons[piece.index] = piece.finish_reason;
            yield sseData({
              ...base(),
              choices: [
                { index: piece.index, delta, logprobs: piece.logprobs ?? null, finish_reason: piece.finish_reason },
              ],
              ...(includeUsage ? { usage: null } : {}),
              ...(piece.finish_reason && citations ? { citations } : {}),
            });
          }
          const following = await next();
          if (following === "cut") {
            // Never end silently: a client must be able to tell a cut answer from a complete one.
            abort.abort();
            throw new GatewayError("server_shutting_down");
          }
          step = following;
        }
        if (includeUsage && usage) yield sseData({ ...base(), choices: [], usage });
        yield SSE_DONE;
      } catch (err) {
        if (err instanceof ClientGone || (abort.signal.aborted && !(err instanceof GatewayError))) {
          metrics.clientAborts.inc({ channel: metrics.channelLabel.value(channel.id) });
          req.log.info({ channel: channel.id }, "client disconnected mid-stream; upstream call aborted");
          return;
        }
        failure = err instanceof GatewayError ? err : new GatewayError("internal_error");
        if (!(err instanceof GatewayError)) req.log.error({ err }, "stream failed");
        yield sseData(failure.toBody());
      } finally {
        if (span)
          endAgentSpan(span, {
            id: ex.id,
            finishReasons: reasons?.filter(Boolean) ?? [],
            usage,
            ...(failure ? { error: { type: failure.code, message: failure.message } } : {}),
          });
        // After a cut the agent's pending step may settle only once the aborted upstream call
        // notices: do not hold the response (and the shutdown) for it.
        const closing = iterator.return?.(undefined);
        if (failure?.code === "server_shutting_down") closing?.catch(() => {});
        else await closing;
        open.done();
        record(ex, req, parsed, {
          answer,
          finishReason,
          usage: usage ?? null,
          ...(citations ? { citations } : {}),
          ...(failure ? { error: { code: failure.code, message: failure.message } } : {}),
        });
      }
    };
    return reply.send(Readable.from(frames(), { objectMode: false }));
  }
};
