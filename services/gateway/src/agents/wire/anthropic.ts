// Anthropic's Messages API, translated both ways without I/O: an OpenAI chat request becomes a
// POST /v1/messages body, and a Message becomes a chat.completion. The stream's translation is in
// anthropic-stream.ts. What maps to what:
//   system / developer messages      → the top-level `system` string (joined, in order)
//   user text and image_url parts    → user content blocks (text; image with a base64 or url source)
//   assistant tool_calls             → tool_use blocks (arguments parsed as JSON input)
//   tool messages                    → tool_result blocks in a user turn (consecutive ones merged)
//   tools / tool_choice              → tools with input_schema / {type: auto|any|tool|none}
//   max_tokens (required by Anthropic): the request's max_completion_tokens or max_tokens, else
//   DEFAULT_MAX_TOKENS; stop → stop_sequences; temperature, top_p; user → metadata.user_id
//   stop_reason end_turn|stop_sequence → stop, max_tokens → length, tool_use → tool_calls
//   usage input_tokens (+ cache reads and writes) / output_tokens → prompt / completion tokens
// Fields Anthropic has no equivalent for (n, logprobs, seed, penalties, response_format) are not
// sent: an OpenAI client reaching a Claude model gets its answer without them.
import type { ChatMessage } from "../../chat-request.ts";

export const ANTHROPIC_VERSION = "2023-06-01";
/** max_tokens when neither the request nor the Agent sets one (Anthropic requires it). */
export const DEFAULT_MAX_TOKENS = 4096;

type Json = Record<string, unknown>;
type Block = Json & { type: string };
interface Turn {
  role: "user" | "assistant";
  content: Block[];
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p: { type?: string; text?: string }) => (p.type === "text" && typeof p.text === "string" ? p.text : ""))
    .join("");
}

/** An image_url part as an Anthropic image block: data: URLs become base64 sources. */
function imageBlock(url: string): Block {
  const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (m) return { type: "image", source: { type: "base64", media_type: m[1], data: m[2] } };
  return { type: "image", source: { type: "url", url } };
}

function userBlocks(content: unknown): Block[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  const out: Block[] = [];
  for (const p of Array.isArray(content) ? (content as Json[]) : []) {
    if (p.type === "text" && typeof p.text === "string") out.push({ type: "text", text: p.text });
    else if (p.type === "image_url") out.push(imageBlock(String((p.image_url as { url?: unknown })?.url ?? "")));
  }
  return out;
}

function parseArguments(args: string): unknown {
  try {
    const v = JSON.parse(args) as unknown;
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v : { value: v };
  } catch {
    return {};
  }
}

function assistantBlocks(m: Extract<ChatMessage, { role: "assistant" }>): Block[] {
  const out: Block[] = [];
  const text = textOf(m.content);
  if (text) out.push({ type: "text", text });
  for (const call of m.tool_calls ?? []) {
    out.push({
      type: "tool_use",
      id: call.id,
      name: call.function.name,
      input: parseArguments(call.function.arguments),
    });
  }
  return out;
}

/** The `system` text and the alternating turns, consecutive same-role messages merged. */
export function anthropicMessages(messages: readonly ChatMessage[]): { system: string | undefined; turns: Turn[] } {
  const system: string[] = [];
  const turns: Turn[] = [];
  const push = (role: Turn["role"], blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === "system" || m.role === "developer") system.push(textOf(m.content));
    else if (m.role === "user") push("user", userBlocks(m.content));
    else if (m.role === "assistant") push("assistant", assistantBlocks(m));
    else push("user", [{ type: "tool_result", tool_use_id: m.tool_call_id, content: textOf(m.content) }]);
  }
  return { system: system.length > 0 ? system.join("\n\n") : undefined, turns };
}

function anthropicTools(tools: unknown): Json[] | undefined {
  if (!Array.isArray(tools)) return undefined;
  return (tools as Array<{ function: Json }>).map(({ function: f }) => ({
    name: f.name,
    ...(typeof f.description === "string" ? { description: f.description } : {}),
    input_schema: (f.parameters as Json | undefined) ?? { type: "object", properties: {} },
  }));
}

function anthropicToolChoice(choice: unknown, parallel: unknown): Json | undefined {
  const noParallel = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === "none") return { type: "none" };
  if (choice === "required") return { type: "any", ...noParallel };
  if (choice && typeof choice === "object") {
    const name = (choice as { function?: { name?: unknown } }).function?.name;
    if (typeof name === "string") return { type: "tool", name, ...noParallel };
  }
  if (choice === "auto" || parallel === false) return { type: "auto", ...noParallel };
  return undefined;
}

/** The Messages API body for an OpenAI chat body (as llm-agent.ts builds it, model included). */
export function toAnthropicRequest(body: Json): Json {
  const { system, turns } = anthropicMessages(body.messages as ChatMessage[]);
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS;
  const out: Json = { model: body.model, max_tokens: maxTokens, messages: turns };
  if (system !== undefined) out.system = system;
  if (typeof body.temperature === "number") out.temperature = Math.min(1, body.temperature);
  if (typeof body.top_p === "number") out.top_p = body.top_p;
  if (typeof body.stop === "string") out.stop_sequences = [body.stop];
  else if (Array.isArray(body.stop)) out.stop_sequences = body.stop;
  const tools = anthropicTools(body.tools);
  if (tools) out.tools = tools;
  const toolChoice = tools ? anthropicToolChoice(body.tool_choice, body.parallel_tool_calls) : undefined;
  if (toolChoice) out.tool_choice = toolChoice;
  if (typeof body.user === "string") out.metadata = { user_id: body.user };
  if (body.stream === true) out.stream = true;
  return out;
}

/** OpenAI's finish_reason for an Anthropic stop_reason. */
export function finishReasonOf(stop: unknown): string {
  if (stop === "max_tokens") return "length";
  if (stop === "tool_use") return "tool_calls";
  if (stop === "refusal") return "content_filter";
  return "stop";
}

/** OpenAI usage from Anthropic's (cache reads and writes are prompt tokens too). */
export function usageOf(u: Json | undefined): Json | undefined {
  if (!u) return undefined;
  const num = (k: string) => (typeof u[k] === "number" ? (u[k] as number) : 0);
  const cached = num("cache_read_input_tokens");
  const prompt = num("input_tokens") + cached + num("cache_creation_input_tokens");
  const completion = num("output_tokens");
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    ...(cached > 0 ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
  };
}

/** A chat.completion for an Anthropic Message. */
export function fromAnthropicMessage(msg: Json): Json {
  const blocks = Array.isArray(msg.content) ? (msg.content as Block[]) : [];
  const text = blocks
    .filter((b) => b.type === "text")
    .map((b) => String(b.text ?? ""))
    .join("");
  const toolCalls = blocks
    .filter((b) => b.type === "tool_use")
    .map((b) => ({
      id: String(b.id),
      type: "function",
      function: { name: String(b.name), arguments: JSON.stringify(b.input ?? {}) },
    }));
  const message: Json = { role: "assistant", content: text || (toolCalls.length > 0 ? null : ""), refusal: null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return {
    id: msg.id,
    object: "chat.completion",
    model: msg.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReasonOf(msg.stop_reason) }],
    usage: usageOf(msg.usage as Json | undefined),
  };
}
