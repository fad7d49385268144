// The chat request (reference 2.3, OpenAI chat-completions body) as one zod schema, and the
// translation of a zod failure into a 400 naming the offending param the way OpenAI does
// ("messages.[0].role"). Unknown top-level fields are ignored (forward-compatible with newer SDKs).
import { z } from "zod";
import { GatewayError } from "./errors.ts";
import { gatewaySchemas } from "./http/schemas.ts";

const textPart = z.object({ type: z.literal("text"), text: z.string() });
const imagePart = z.object({
  type: z.literal("image_url"),
  image_url: z.object({ url: z.string().min(1), detail: z.enum(["auto", "low", "high"]).optional() }),
});
const audioPart = z.object({
  type: z.literal("input_audio"),
  input_audio: z.object({ data: z.string(), format: z.string() }),
});
const filePart = z.object({ type: z.literal("file"), file: z.record(z.string(), z.unknown()) });
const refusalPart = z.object({ type: z.literal("refusal"), refusal: z.string() });
export const contentPart = z.discriminatedUnion("type", [textPart, imagePart, audioPart, filePart, refusalPart]);
export type ContentPart = z.infer<typeof contentPart>;

const content = z.union([z.string(), z.array(contentPart).min(1)]);

const toolCall = z.object({
  id: z.string().min(1),
  type: z.literal("function"),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

const name = z.string().min(1).max(256).optional();

const assistantMessage = z
  .object({
    role: z.literal("assistant"),
    content: content.nullable().optional(),
    name,
    refusal: z.string().nullable().optional(),
    tool_calls: z.array(toolCall).optional(),
  })
  .refine((m) => (m.content !== undefined && m.content !== null) || (m.tool_calls?.length ?? 0) > 0, {
    message: "an assistant message needs content or tool_calls",
    path: ["content"],
  });
// The refinement as JSON Schema in the published document (it cannot be derived from a function).
gatewaySchemas.add(assistantMessage, {
  anyOf: [
    { required: ["content"], properties: { content: { not: { type: "null" } } } },
    { required: ["tool_calls"], properties: { tool_calls: { minItems: 1 } } },
  ],
});

export const chatMessage = z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), content, name }),
  z.object({ role: z.literal("developer"), content, name }),
  z.object({ role: z.literal("user"), content, name }),
  assistantMessage,
  z.object({ role: z.literal("tool"), content, tool_call_id: z.string().min(1) }),
]);
export type ChatMessage = z.infer<typeof chatMessage>;

const stop = z.union([z.string(), z.array(z.string()).max(4)]).nullable();

export const chatRequest = z.object({
  model: z.string({ error: "model is required and must be a string" }).min(1, "model must not be empty"),
  messages: z
    .array(chatMessage, { error: "messages is required and must be an array" })
    .min(1, "messages must not be empty")
    .max(4096),
  stream: z.boolean().nullable().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  n: z.int().min(1).max(128).nullable().optional(),
  max_tokens: z.int().min(1).nullable().optional(),
  max_completion_tokens: z.int().min(1).nullable().optional(),
  stop: stop.optional(),
  presence_penalty: z.number().min(-2).max(2).nullable().optional(),
  frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
  logit_bias: z.record(z.string(), z.number().min(-100).max(100)).nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.int().min(0).max(20).nullable().optional(),
  seed: z.int().nullable().optional(),
  user: z.string().max(512).optional(),
  response_format: z
    .object({ type: z.enum(["text", "json_object", "json_schema"]) })
    .loose()
    .optional(),
  tools: z
    .array(z.object({ type: z.literal("function"), function: z.object({ name: z.string().min(1) }).loose() }).loose())
    .max(128)
    .optional(),
  tool_choice: z
    .union([z.enum(["none", "auto", "required"]), z.object({ type: z.literal("function") }).loose()])
    .optional(),
  parallel_tool_calls: z.boolean().optional(),
  reasoning_effort: z.enum(["minimal", "low", "medium", "high"]).nullable().optional(),
  metadata: z.record(z.string(), z.string()).nullable().optional(),
});
export type ChatRequest = z.infer<typeof chatRequest>;

/** Fields forwarded to an upstream provider as they came (sampling and tool fields). */
export const PASSTHROUGH_FIELDS = [
  "temperature",
  "top_p",
  "n",
  "max_tokens",
  "max_completion_tokens",
  "stop",
  "presence_penalty",
  "frequency_penalty",
  "logit_bias",
  "logprobs",
  "top_logprobs",
  "seed",
  "user",
  "response_format",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "reasoning_effort",
] as const satisfies readonly (keyof ChatRequest)[];

/** OpenAI's param notation: messages.[0].content */
export function paramOf(path: readonly PropertyKey[]): string | null {
  if (path.length === 0) return null;
  return path.map((p) => (typeof p === "number" ? `[${p}]` : String(p))).join(".");
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const optNullable = (v: unknown, ok: (v: unknown) => boolean) => v === undefined || v === null || ok(v);
const inRange = (min: number, max: number) => (v: unknown) => typeof v === "number" && v >= min && v <= max;
const safeInt = (min: number, max: number) => (v: unknown) =>
  Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max;
const isBoolean = (v: unknown) => typeof v === "boolean";

/** Top-level fields the fast path checks itself (the same rules as the schema); any other key goes to zod. */
const FAST_FIELDS: Record<string, (v: unknown) => boolean> = {
  model: (v) => typeof v === "string" && v.length > 0,
  messages: (v) => Array.isArray(v) && v.length >= 1 && v.length <= 4096 && v.every(isPlainTextMessage),
  stream: (v) => optNullable(v, isBoolean),
  stream_options: (v) =>
    optNullable(
      v,
      (o) =>
        isObject(o) &&
        Object.keys(o).every((k) => k === "include_usage") &&
        (o.include_usage === undefined || typeof o.include_usage === "boolean"),
    ),
  temperature: (v) => optNullable(v, inRange(0, 2)),
  top_p: (v) => optNullable(v, inRange(0, 1)),
  n: (v) => optNullable(v, safeInt(1, 128)),
  max_tokens: (v) => optNullable(v, safeInt(1, Number.MAX_SAFE_INTEGER)),
  max_completion_tokens: (v) => optNullable(v, safeInt(1, Number.MAX_SAFE_INTEGER)),
  presence_penalty: (v) => optNullable(v, inRange(-2, 2)),
  frequency_penalty: (v) => optNullable(v, inRange(-2, 2)),
  logprobs: (v) => optNullable(v, isBoolean),
  seed: (v) => optNullable(v, safeInt(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)),
  user: (v) => v === undefined || (typeof v === "string" && v.length <= 512),
  parallel_tool_calls: (v) => v === undefined || typeof v === "boolean",
};
const TEXT_ROLES = new Set(["system", "developer", "user", "assistant"]);

/** {role: system|developer|user|assistant, content: string, name?}: the common message, and nothing else. */
function isPlainTextMessage(m: unknown): boolean {
  if (!isObject(m) || typeof m.content !== "string" || !TEXT_ROLES.has(m.role as string)) return false;
  for (const k in m) {
    if (k === "role" || k === "content") continue;
    if (k !== "name") return false;
    const name = m.name;
    if (name !== undefined && (typeof name !== "string" || name.length < 1 || name.length > 256)) return false;
  }
  return true;
}

/**
 * The common request (text messages, the usual sampling fields) checked by hand, without zod:
 * true only when the schema would accept the body and return it unchanged (no unknown key to
 * strip, no default to add). Anything else, valid or not, is left to the schema, so its output
 * and its error messages are the schema's.
 */
export function isCommonChatRequest(body: Record<string, unknown>): boolean {
  if (typeof body.model !== "string" || !Array.isArray(body.messages)) return false;
  for (const k in body) {
    const check = FAST_FIELDS[k];
    if (check === undefined || !Object.hasOwn(FAST_FIELDS, k) || !check(body[k])) return false;
  }
  return true;
}

/** Parses a request body, or throws a 400 naming the first bad param. */
export function parseChatRequest(body: unknown): ChatRequest {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new GatewayError("invalid_request", { detail: "The request body must be a JSON object." });
  }
  if (isCommonChatRequest(body as Record<string, unknown>)) return body as ChatRequest;
  const result = chatRequest.safeParse(body);
  if (result.success) return result.data;
  const issue = deepestIssue(result.error.issues);
  const param = paramOf(issue.path);
  const detail = param ? `Invalid value for '${param}': ${issue.message}` : issue.message;
  throw new GatewayError("invalid_request", { detail }, { param });
}

type Issue = z.core.$ZodIssue;

/** For union failures zod reports the union; the most specific branch error is more useful. */
function deepestIssue(issues: Issue[]): Issue {
  const first = issues[0] as Issue;
  if (first.code === "invalid_union" && first.errors.length > 0) {
    const branches = first.errors.map((errs) => (errs.length > 0 ? deepestIssue(errs) : undefined));
    const best = branches.filter((i): i is Issue => i !== undefined).sort((a, b) => b.path.length - a.path.length)[0];
    if (best) return { ...best, path: [...first.path, ...best.path] };
  }
  return first;
}

/** The text of a message's content (text parts joined; other parts ignored). */
export function textOf(content: ChatMessage["content"]): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  return content
    .map((p) => (p.type === "text" ? p.text : ""))
    .filter(Boolean)
    .join("\n");
}

/** The last user message's text: the query for retrieval. */
export function lastUserText(messages: ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === "user") return textOf(m.content);
  }
  return "";
}
