// A fake Anthropic Messages API on loopback, speaking its documented wire protocol: POST
// /v1/messages with x-api-key and anthropic-version headers (401 authentication_error / 400
// invalid_request_error without them), the request checked the way the API checks it (model,
// max_tokens required; messages non-empty, starting with user, roles alternating; every
// tool_result answering a tool_use of the turn before; content blocks of known types), errors as
// {"type":"error","error":{"type","message"}} with the API's statuses (429 rate_limit_error with
// retry-after, 529 overloaded_error, 500 api_error). Answers are a Message, or with stream: true
// the named server-sent events message_start, content_block_start, ping, content_block_delta
// (text_delta / input_json_delta), content_block_stop, message_delta (stop_reason, usage),
// message_stop. The model picks a behaviour: echo (the default; "echo: <last user text>"),
// status:<code>. Offered tools, it calls the first one ({"city":"Paris"}); after a tool_result it
// answers "tool said: <result>". Every call is recorded for assertions.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

type Json = Record<string, unknown>;

export interface AnthropicCall {
  headers: IncomingMessage["headers"];
  body: Json & { model: string; messages: Array<{ role: string; content: unknown }> };
}

export interface FakeAnthropic {
  /** Base URL as an Agent upstream's baseURL: {url}/v1 */
  baseURL: string;
  calls: AnthropicCall[];
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error",
};

/** The first thing wrong with a request, as the API words it, or undefined. */
function invalid(body: Json): string | undefined {
  if (typeof body.model !== "string") return "model: Field required";
  if (typeof body.max_tokens !== "number") return "max_tokens: Field required";
  const messages = body.messages as Array<{ role: string; content: unknown }> | undefined;
  if (!Array.isArray(messages) || messages.length === 0) return "messages: at least one message is required";
  if (body.system !== undefined && typeof body.system !== "string" && !Array.isArray(body.system))
    return "system: Input should be a valid string";
  let toolUses = new Set<string>();
  for (const [i, m] of messages.entries()) {
    if (m.role !== "user" && m.role !== "assistant") return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    if (i === 0 && m.role !== "user") return 'messages: first message must use the "user" role';
    if (i > 0 && messages[i - 1]?.role === m.role)
      return 'messages: roles must alternate between "user" and "assistant"';
    const blocks = typeof m.content === "string" ? [] : (m.content as Json[]);
    if (!Array.isArray(blocks)) return `messages.${i}.content: Input should be a valid list`;
    const next = new Set<string>();
    for (const b of blocks) {
      if (!["text", "image", "tool_use", "tool_result"].includes(String(b.type)))
        return `messages.${i}.content: unknown block type ${String(b.type)}`;
      if (b.type === "tool_use") next.add(String(b.id));
      if (b.type === "tool_result" && !toolUses.has(String(b.tool_use_id)))
        return `messages.${i}.content: unexpected tool_use_id found in tool_result blocks: ${String(b.tool_use_id)}`;
    }
    toolUses = next;
  }
  return undefined;
}

function lastUserText(messages: AnthropicCall["body"]["messages"]): { text: string; toolResult: boolean } {
  const m = messages.at(-1);
  if (typeof m?.content === "string") return { text: m.content, toolResult: false };
  const blocks = (m?.content as Json[]) ?? [];
  const result = blocks.find((b) => b.type === "tool_result");
  if (result) return { text: String(result.content), toolResult: true };
  return { text: blocks.map((b) => (b.type === "text" ? String(b.text) : "")).join(" "), toolResult: false };
}

export async function startFakeAnthropic(opts: { apiKey: string }): Promise<FakeAnthropic> {
  const calls: AnthropicCall[] = [];
  let n = 0;

  function fail(res: ServerResponse, status: number, message: string): undefined {
    res.writeHead(status, { "content-type": "application/json", ...(status === 429 ? { "retry-after": "0" } : {}) });
    res.end(JSON.stringify({ type: "error", error: { type: ERROR_TYPES[status] ?? "api_error", message } }));
  }

  function handle(req: IncomingMessage, res: ServerResponse, raw: string): undefined {
    if (req.method !== "POST" || req.url !== "/v1/messages") return fail(res, 404, "Not found");
    if (req.headers["x-api-key"] !== opts.apiKey) return fail(res, 401, "invalid x-api-key");
    if (!req.headers["anthropic-version"]) return fail(res, 400, "anthropic-version: header is required");
    const body = JSON.parse(raw) as AnthropicCall["body"];
    calls.push({ headers: req.headers, body });
    const problem = invalid(body);
    if (problem) return fail(res, 400, problem);
    const [mode, arg] = body.model.split(":");
    if (mode === "status") return fail(res, Number(arg), `fake status ${arg}`);
    const last = lastUserText(body.messages);
    const tools = body.tools as Array<{ name: string }> | undefined;
    const toolUse = tools?.length && !last.toolResult ? { id: `toolu_fake${++n}`, name: tools[0]?.name } : undefined;
    const text = last.toolResult ? `tool said: ${last.text}` : `echo: ${last.text}`;
    const input = { city: "Paris" };
    const usage = { input_tokens: JSON.stringify(body.messages).length >> 4, output_tokens: text.split(" ").length };
    const id = `msg_fake${++n}`;
    const stop = toolUse ? "tool_use" : "end_turn";
    if (body.stream !== true) {
      res.writeHead(200, { "content-type": "application/json", "request-id": `req_${n}` });
      res.end(
        JSON.stringify({
          id,
          type: "message",
          role: "assistant",
          model: body.model,
          content: toolUse ? [{ type: "tool_use", ...toolUse, input }] : [{ type: "text", text }],
          stop_reason: stop,
          stop_sequence: null,
          usage,
        }),
      );
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const event = (type: string, data: Json) =>
      res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    event("message_start", {
      message: {
        id,
        type: "message",
        role: "assistant",
        model: body.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage.input_tokens, output_tokens: 1 },
      },
    });
    if (toolUse) {
      event("content_block_start", { index: 0, content_block: { type: "tool_use", ...toolUse, input: {} } });
      event("ping", {});
      const json = JSON.stringify(input);
      for (const part of [json.slice(0, 5), json.slice(5)])
        event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: part } });
    } else {
      event("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
      event("ping", {});
      for (const word of text.match(/\S+\s*/g) ?? [])
        event("content_block_delta", { index: 0, delta: { type: "text_delta", text: word } });
    }
    event("content_block_stop", { index: 0 });
    event("message_delta", {
      delta: { stop_reason: stop, stop_sequence: null },
      usage: { output_tokens: usage.output_tokens },
    });
    event("message_stop", {});
    res.end();
  }

  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => handle(req, res, Buffer.concat(parts).toString("utf8")));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseURL: `${url}/v1`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
