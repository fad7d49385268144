// A streamed answer as chat.completion.chunk events: the first delta of a choice carries the
// role, the last carries finish_reason, then the usage chunk when stream_options.include_usage,
// then [DONE]. An error after the first byte is sent as an OpenAI error event and the stream
// ends without [DONE]; a client that goes away ends it quietly (the upstream call is aborted).
import { usageOf } from "../agents/tokens.ts";
import type { Citation, StreamPiece, Usage } from "../agents/types.ts";
import { ClientGone } from "../agents/upstream.ts";
import { GatewayError } from "../errors.ts";
import { endAgentSpan } from "../http/agent-span.ts";
import { SSE_DONE, sseData } from "../http/sse.ts";
import { type ChatRouteOptions, firstToken, recordTurn, type Turn } from "./chat-turn.ts";

/** The agent's next piece, or "cut" when the drain window ends first. */
export type NextPiece = () => Promise<IteratorResult<StreamPiece> | "cut">;

/** What a stream has said so far, for its last chunk, the span and the record. */
class StreamState {
  readonly roleSent = new Set<number>();
  citations: Citation[] | undefined;
  usage: Usage | undefined;
  answer = "";
  finishReason: string | null = null;
  /** Each choice's finish reason, for the span (a sampled request's only). */
  readonly reasons: string[] | undefined;
  failure: GatewayError | undefined;
  constructor(sampled: boolean) {
    this.reasons = sampled ? [] : undefined;
  }
}

function chunkBase(turn: Turn) {
  return {
    id: turn.id,
    object: "chat.completion.chunk",
    created: turn.created,
    model: turn.model,
    system_fingerprint: null,
  };
}

/** The event of one piece, or undefined for pieces that only update the state. */
function frameOf(
  gateway: ChatRouteOptions,
  turn: Turn,
  state: StreamState,
  piece: StreamPiece,
  includeUsage: boolean,
): string | undefined {
  if (piece.kind === "citations") state.citations = piece.citations;
  else if (piece.kind === "usage") state.usage = piece.usage;
  else {
    const delta = state.roleSent.has(piece.index) ? piece.delta : { role: "assistant", ...piece.delta };
    state.roleSent.add(piece.index);
    if (piece.index === 0 && typeof piece.delta.content === "string") state.answer += piece.delta.content;
    if (turn.firstTokenAt === null && (piece.delta.content || piece.delta.tool_calls)) firstToken(gateway, turn);
    if (piece.finish_reason && piece.index === 0) state.finishReason = piece.finish_reason;
    if (state.reasons && piece.finish_reason) state.reasons[piece.index] = piece.finish_reason;
    return sseData({
      ...chunkBase(turn),
      choices: [{ index: piece.index, delta, logprobs: piece.logprobs ?? null, finish_reason: piece.finish_reason }],
      ...(includeUsage ? { usage: null } : {}),
      ...(piece.finish_reason && state.citations ? { citations: state.citations } : {}),
    });
  }
  return undefined;
}

/** Text longer than this is not tokenized at the stream's end (CPU): ~4 characters a token. */
const TOKENIZE_MAX_CHARS = 200_000;

/** The usage of a stream that sent no usage chunk, counted from what was sent. */
async function countedUsage(turn: Turn, answer: string): Promise<Usage | undefined> {
  const head = answer.length > TOKENIZE_MAX_CHARS ? answer.slice(0, TOKENIZE_MAX_CHARS) : answer;
  const usage = await usageOf(turn.parsed.messages, head).catch(() => undefined);
  if (!usage || head.length === answer.length) return usage;
  const rest = Math.ceil((answer.length - head.length) / 4);
  return { ...usage, completion_tokens: usage.completion_tokens + rest, total_tokens: usage.total_tokens + rest };
}

/** The stream's end, however it ended: the span, the agent's iterator, the drain slot, the record. */
async function endStream(
  gateway: ChatRouteOptions,
  turn: Turn,
  state: StreamState,
  iterator: AsyncIterator<StreamPiece>,
  done: () => void,
): Promise<void> {
  const { failure } = state;
  if (turn.span)
    endAgentSpan(turn.span, {
      id: turn.id,
      finishReasons: state.reasons?.filter(Boolean) ?? [],
      usage: state.usage,
      ...(failure ? { error: { type: failure.code, message: failure.message } } : {}),
    });
  // After a cut the agent's pending step may settle only once the aborted upstream call notices:
  // do not hold the response (and the shutdown) for it.
  const closing = iterator.return?.(undefined);
  if (failure?.code === "server_shutting_down") closing?.catch(() => {});
  else await closing;
  done();
  // A stream cut short has no usage chunk: what was sent is counted with the gateway's tokenizer,
  // so a broken or abandoned stream still counts against the channel's TPM, budget and usage.
  const counted = state.usage ? undefined : await countedUsage(turn, state.answer);
  recordTurn(
    gateway,
    turn,
    {
      answer: state.answer,
      finishReason: state.finishReason,
      usage: state.usage ?? null,
      ...(state.citations ? { citations: state.citations } : {}),
      ...(failure ? { error: { code: failure.code, message: failure.message } } : {}),
    },
    counted,
  );
}

/** The events of a stream whose first piece is already there. */
export async function* streamFrames(
  gateway: ChatRouteOptions,
  turn: Turn,
  iterator: AsyncIterator<StreamPiece>,
  first: IteratorResult<StreamPiece>,
  next: NextPiece,
  done: () => void,
): AsyncGenerator<string> {
  const includeUsage = turn.parsed.stream_options?.include_usage === true;
  const state = new StreamState(turn.span !== undefined);
  try {
    let step = first;
    while (!step.done) {
      const frame = frameOf(gateway, turn, state, step.value, includeUsage);
      if (frame) yield frame;
      const following = await next();
      if (following === "cut") {
        // Never end silently: a client must be able to tell a cut answer from a complete one.
        turn.abort.abort();
        throw new GatewayError("server_shutting_down");
      }
      step = following;
    }
    if (includeUsage && state.usage) yield sseData({ ...chunkBase(turn), choices: [], usage: state.usage });
    yield SSE_DONE;
  } catch (err) {
    if (err instanceof ClientGone || (turn.abort.signal.aborted && !(err instanceof GatewayError))) {
      const { metrics } = gateway;
      metrics.clientAborts.inc({ channel: metrics.channelLabel.value(turn.channel.id) });
      turn.req.log.info({ channel: turn.channel.id }, "client disconnected mid-stream; upstream call aborted");
      return;
    }
    state.failure = err instanceof GatewayError ? err : new GatewayError("internal_error");
    if (!(err instanceof GatewayError)) turn.req.log.error({ err }, "stream failed");
    yield sseData(state.failure.toBody());
  } finally {
    await endStream(gateway, turn, state, iterator, done);
  }
}
