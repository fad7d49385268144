// Anthropic's streamed Message (server-sent events message_start, content_block_start,
// content_block_delta, content_block_stop, message_delta, message_stop, ping, error) as OpenAI
// chat.completion.chunk events, without I/O: each event's data JSON in, chunk JSON strings out.
//   message_start                 → the first chunk, delta {role: "assistant", content: ""}
//   text_delta                    → delta {content}
//   tool_use block start          → delta {tool_calls: [{index, id, type: "function", function: {name, arguments: ""}}]}
//   input_json_delta              → delta {tool_calls: [{index, function: {arguments: <partial JSON>}}]}
//   message_delta (stop_reason)   → delta {} with finish_reason
//   message_stop                  → a usage chunk (choices: []), then the stream ends
//   error                         → thrown as the gateway's upstream_error (a stream that has not
//                                   yet sent a byte to the client falls to the next upstream)
// Thinking blocks and their deltas are not passed on (the OpenAI chunk has no place for them).
import { GatewayError } from "../../errors.ts";
import { finishReasonOf, usageOf } from "./anthropic.ts";

type Json = Record<string, unknown>;

/** The translation's state: the message's id, model and usage so far, and the tool blocks seen. */
class StreamTranslation {
  private id = "";
  private model = "";
  private usage: Json = {};
  /** Anthropic's content block index → OpenAI's tool_calls index. */
  private readonly tools = new Map<number, number>();
  private readonly created: number;

  constructor(created: number) {
    this.created = created;
  }

  /** The chunks one event becomes, and whether the stream ended with it. */
  step(e: Json): { chunks: string[]; end?: true } {
    switch (e.type) {
      case "message_start": {
        const m = (e.message ?? {}) as Json;
        this.id = String(m.id ?? "");
        this.model = String(m.model ?? "");
        this.usage = { ...((m.usage as Json | undefined) ?? {}) };
        return { chunks: [this.chunk({ role: "assistant", content: "" }, null)] };
      }
      case "content_block_start":
        return { chunks: this.blockStart(Number(e.index), (e.content_block ?? {}) as Json) };
      case "content_block_delta":
        return { chunks: this.blockDelta(Number(e.index), (e.delta ?? {}) as Json) };
      case "message_delta": {
        this.usage = { ...this.usage, ...((e.usage as Json | undefined) ?? {}) };
        const stop = (e.delta as Json | undefined)?.stop_reason;
        return { chunks: stop !== undefined && stop !== null ? [this.chunk({}, finishReasonOf(stop))] : [] };
      }
      case "message_stop":
        return { chunks: [this.message({ choices: [], usage: usageOf(this.usage) })], end: true };
      case "error": {
        const err = (e.error ?? {}) as Json;
        throw new GatewayError("upstream_error", { detail: `${String(err.type ?? "error")} during the stream` });
      }
      default:
        // ping, content_block_stop, thinking: nothing to pass on.
        return { chunks: [] };
    }
  }

  private blockStart(blockIndex: number, block: Json): string[] {
    if (block.type === "tool_use") {
      const index = this.tools.size;
      this.tools.set(blockIndex, index);
      const call = { index, id: block.id, type: "function", function: { name: block.name, arguments: "" } };
      return [this.chunk({ tool_calls: [call] }, null)];
    }
    if (block.type === "text" && typeof block.text === "string" && block.text) {
      return [this.chunk({ content: block.text }, null)];
    }
    return [];
  }

  private blockDelta(blockIndex: number, d: Json): string[] {
    if (d.type === "text_delta") return [this.chunk({ content: String(d.text ?? "") }, null)];
    const index = d.type === "input_json_delta" ? this.tools.get(blockIndex) : undefined;
    if (index === undefined) return [];
    return [this.chunk({ tool_calls: [{ index, function: { arguments: String(d.partial_json ?? "") } }] }, null)];
  }

  private chunk(delta: Json, finish: string | null): string {
    return this.message({ choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  }

  private message(rest: Json): string {
    return JSON.stringify({
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created,
      model: this.model,
      ...rest,
    });
  }
}

export async function* fromAnthropicStream(events: AsyncIterable<string>, created: number): AsyncGenerator<string> {
  const translation = new StreamTranslation(created);
  for await (const data of events) {
    let e: Json;
    try {
      e = JSON.parse(data) as Json;
    } catch {
      throw new GatewayError("upstream_error", { detail: "the stream carried an event that is not JSON" });
    }
    const { chunks, end } = translation.step(e);
    yield* chunks;
    if (end) return;
  }
}
