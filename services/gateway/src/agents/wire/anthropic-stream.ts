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

export async function* fromAnthropicStream(events: AsyncIterable<string>, created: number): AsyncGenerator<string> {
  let id = "";
  let model = "";
  let usage: Json = {};
  /** Anthropic's content block index → OpenAI's tool_calls index. */
  const tools = new Map<number, number>();
  const chunk = (delta: Json, finish: string | null) =>
    JSON.stringify({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
  for await (const data of events) {
    let e: Json;
    try {
      e = JSON.parse(data) as Json;
    } catch {
      throw new GatewayError("upstream_error", { detail: "the stream carried an event that is not JSON" });
    }
    switch (e.type) {
      case "message_start": {
        const m = (e.message ?? {}) as Json;
        id = String(m.id ?? "");
        model = String(m.model ?? "");
        usage = { ...((m.usage as Json | undefined) ?? {}) };
        yield chunk({ role: "assistant", content: "" }, null);
        break;
      }
      case "content_block_start": {
        const block = (e.content_block ?? {}) as Json;
        if (block.type === "tool_use") {
          const index = tools.size;
          tools.set(Number(e.index), index);
          yield chunk(
            { tool_calls: [{ index, id: block.id, type: "function", function: { name: block.name, arguments: "" } }] },
            null,
          );
        } else if (block.type === "text" && typeof block.text === "string" && block.text) {
          yield chunk({ content: block.text }, null);
        }
        break;
      }
      case "content_block_delta": {
        const d = (e.delta ?? {}) as Json;
        if (d.type === "text_delta") yield chunk({ content: String(d.text ?? "") }, null);
        else if (d.type === "input_json_delta") {
          const index = tools.get(Number(e.index));
          if (index !== undefined) {
            yield chunk({ tool_calls: [{ index, function: { arguments: String(d.partial_json ?? "") } }] }, null);
          }
        }
        break;
      }
      case "message_delta": {
        usage = { ...usage, ...((e.usage as Json | undefined) ?? {}) };
        const stop = (e.delta as Json | undefined)?.stop_reason;
        if (stop !== undefined && stop !== null) yield chunk({}, finishReasonOf(stop));
        break;
      }
      case "message_stop":
        yield JSON.stringify({
          id,
          object: "chat.completion.chunk",
          created,
          model,
          choices: [],
          usage: usageOf(usage),
        });
        return;
      case "error": {
        const err = (e.error ?? {}) as Json;
        throw new GatewayError("upstream_error", {
          detail: `${String(err.type ?? "error")} during the stream`,
        });
      }
      default:
      // ping, content_block_stop, thinking: nothing to pass on.
    }
  }
}
