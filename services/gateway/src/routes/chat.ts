// POST /api/v1/chat/completions, as a plugin registered inside /api/v1 (auth and QPM hooks run
// in onRequest there), then validation (the route's schema), then the channel's token limits
// (chat-turn.ts), then the agent: a whole answer here, a stream in chat-stream.ts.
// Non-stream answers are one chat.completion; streams are chat.completion.chunk events (the first
// delta of a choice carries the role, the last carries finish_reason, then the usage chunk when
// stream_options.include_usage, then [DONE]). Errors before the first byte get their HTTP status;
// an error after it is sent as an OpenAI error event and the stream ends without [DONE].
import { Readable } from "node:stream";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { type Completion, modeOf, type StreamPiece } from "../agents/types.ts";
import { ClientGone, errorTypeOf } from "../agents/upstream.ts";
import { chatRequest, parseChatRequest } from "../chat-request.ts";
import { GatewayError } from "../errors.ts";
import { endAgentSpan } from "../http/agent-span.ts";
import { inRequestContext } from "../http/request-context.ts";
import { chatCompletion, chatCompletionStream, errorResponses } from "../http/schemas.ts";
import { streamFrames } from "./chat-stream.ts";
import { type ChatRouteOptions, firstToken, recordTurn, startTurn, type Turn } from "./chat-turn.ts";

export type { ChatRouteOptions } from "./chat-turn.ts";

/** A request's slot in the drain: `cut` resolves when it must end now. */
interface DrainSlot {
  cut: Promise<"cut">;
  done: () => void;
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
    (req, reply) => inRequestContext(req, () => handle(gateway, req, reply)),
  );
};

// The client went away before the answer: the upstream call was aborted; nobody reads this reply
// (499 is the de-facto "client closed request" status, so metrics tell it apart from errors).
function clientGone(gateway: ChatRouteOptions, req: FastifyRequest, reply: FastifyReply, channel: string) {
  const { metrics } = gateway;
  metrics.clientAborts.inc({ channel: metrics.channelLabel.value(channel) });
  req.log.info({ channel }, "client disconnected before the answer; upstream call aborted");
  return reply.code(499).send();
}

async function handle(gateway: ChatRouteOptions, req: FastifyRequest, reply: FastifyReply) {
  const turn = await startTurn(gateway, req, reply, performance.now());
  const open = gateway.drain.track();
  reply.raw.once("close", open.done);
  return turn.parsed.stream === true ? streamAnswer(gateway, turn, open) : wholeAnswer(gateway, turn, open);
}

/** The agent failed before the first byte: end the span, record the error, answer it. */
function failed(gateway: ChatRouteOptions, turn: Turn, err: unknown) {
  if (turn.span)
    endAgentSpan(turn.span, {
      id: turn.id,
      finishReasons: [],
      usage: null,
      error: { type: errorTypeOf(err), message: (err as Error).message },
    });
  if (err instanceof ClientGone) {
    // Nothing was answered: the prompt tokens taken from the TPM window are given back.
    gateway.tokens.settle(turn.limits, turn.reservation, undefined, {
      agent: turn.channel.agentName,
      upstream: "-",
      model: "-",
    });
    return clientGone(gateway, turn.req, turn.reply, turn.channel.id);
  }
  if (err instanceof GatewayError)
    recordTurn(gateway, turn, { status: err.status, error: { code: err.code, message: err.message } });
  throw err;
}

async function wholeAnswer(gateway: ChatRouteOptions, turn: Turn, open: DrainSlot) {
  let completion: Completion;
  try {
    const answer = turn.inSpan(() => turn.impl.complete(turn.ctx));
    const first = await Promise.race([answer, open.cut]);
    if (first === "cut") {
      // The drain window is over and the answer is not: a 503 the SDKs retry elsewhere.
      turn.abort.abort();
      answer.catch(() => {});
      throw new GatewayError("server_shutting_down");
    }
    completion = first;
  } catch (err) {
    return failed(gateway, turn, err);
  }
  firstToken(gateway, turn);
  if (turn.span)
    endAgentSpan(turn.span, {
      id: turn.id,
      finishReasons: completion.choices.flatMap((c) => (c.finish_reason ? [c.finish_reason] : [])),
      usage: completion.usage,
    });
  const first = completion.choices[0];
  recordTurn(gateway, turn, {
    answer: first?.message.content ?? null,
    finishReason: first?.finish_reason ?? null,
    usage: completion.usage,
    ...(completion.citations ? { citations: completion.citations } : {}),
  });
  return turn.reply.send({
    id: turn.id,
    object: "chat.completion",
    created: turn.created,
    model: turn.model,
    choices: completion.choices,
    usage: completion.usage,
    system_fingerprint: null,
    ...(completion.citations ? { citations: completion.citations } : {}),
  });
}

async function streamAnswer(gateway: ChatRouteOptions, turn: Turn, open: DrainSlot) {
  const iterator = turn.impl.stream(turn.ctx)[Symbol.asyncIterator]();
  const next = (): Promise<IteratorResult<StreamPiece> | "cut"> =>
    Promise.race([turn.inSpan(() => iterator.next()), open.cut]);
  let first: IteratorResult<StreamPiece>;
  try {
    const step = await next();
    if (step === "cut") {
      turn.abort.abort();
      throw new GatewayError("server_shutting_down");
    }
    first = step;
  } catch (err) {
    return failed(gateway, turn, err);
  }
  turn.reply.headers({
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
  });
  const frames = streamFrames(gateway, turn, iterator, first, next, open.done);
  return turn.reply.send(Readable.from(frames, { objectMode: false }));
}
