// A fake OpenAI-compatible provider that speaks the real wire protocol over loopback HTTP:
// POST /v1/chat/completions answers JSON or an SSE stream of chat.completion.chunk events ending
// with data: [DONE] (usage chunk when stream_options.include_usage). The upstream `model` picks a
// behaviour, so one server serves every test:
//   echo                 answer "echo: <last user text>"
//   slow:<ms>            the same, waiting <ms> before each chunk (and before a JSON answer)
//   status:<code>        an OpenAI error body with that HTTP status
//   flaky:<n>:<tag>      503 for the first n calls with this model, then echo
//   disconnect:<n>       stream n chunks, then drop the connection (JSON: drop at once)
//   hang                 never answer (until the caller goes away)
//   no-usage             echo without a usage object
//   big:<n>              stream n content chunks of 8 KiB each (backpressure tests)
// Whatever the model, a request with `tools` whose last message is not a tool result is answered
// with a call of the first tool (arguments {"city":"Paris"}, streamed in two pieces), finish_reason
// tool_calls; after a tool result, the answer is "tool said: <result>".
// Azure OpenAI's path is served too: POST /openai/deployments/{deployment}/chat/completions
// ?api-version=... with the key in an `api-key` header (401 without it, 404 without api-version, as
// Azure answers); the deployment name stands for the model.
// Every call is recorded (headers, body, whether the caller aborted) for assertions.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedCall {
  headers: IncomingMessage["headers"];
  body: { model: string; messages: Array<{ role: string; content: unknown }>; stream?: boolean; [k: string]: unknown };
  /** Azure calls: the deployment and api-version of the URL. */
  azure?: { deployment: string; apiVersion: string };
  aborted: boolean;
  completed: boolean;
  /** Times a write to the caller returned false (the caller was not reading fast enough). */
  blockedWrites: number;
}

export interface FakeOpenAI {
  url: string;
  /** Base URL as an Agent's spec.provider.baseURL: {url}/v1 */
  baseURL: string;
  calls: RecordedCall[];
  callsFor(model: string): RecordedCall[];
  close(): Promise<void>;
}

function lastUser(messages: RecordedCall["body"]["messages"]): string {
  const m = [...messages].reverse().find((x) => x.role === "user");
  if (!m) return "";
  if (typeof m.content === "string") return m.content;
  return Array.isArray(m.content) ? m.content.map((p: { text?: string }) => p.text ?? "").join(" ") : "";
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The call the fake makes when offered tools: the first tool, for Paris. */
function firstToolCall(tools: unknown[]) {
  const name = String((tools[0] as { function?: { name?: unknown } }).function?.name ?? "tool");
  return { id: "call_fake1", type: "function", function: { name, arguments: JSON.stringify({ city: "Paris" }) } };
}

export async function startFakeOpenAI(opts: { chunkWords?: number } = {}): Promise<FakeOpenAI> {
  const calls: RecordedCall[] = [];
  const flakyCounts = new Map<string, number>();
  const chunkWords = opts.chunkWords ?? 1;

  async function handle(req: IncomingMessage, res: ServerResponse, raw: string): Promise<void> {
    const azure = /^\/openai\/deployments\/([^/?]+)\/chat\/completions(?:\?api-version=([\w.-]+))?$/.exec(
      req.url ?? "",
    );
    if (azure && !req.headers["api-key"]) {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "401", message: "Access denied due to invalid subscription key." } }));
      return;
    }
    if (azure && !azure[2]) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "404", message: "Resource not found" } }));
      return;
    }
    if (req.method !== "POST" || (req.url !== "/v1/chat/completions" && !azure)) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ error: { message: "not found", type: "invalid_request_error", param: null, code: null } }),
      );
      return;
    }
    const body = JSON.parse(raw) as RecordedCall["body"];
    const call: RecordedCall = { headers: req.headers, body, aborted: false, completed: false, blockedWrites: 0 };
    if (azure) {
      call.azure = { deployment: decodeURIComponent(azure[1] as string), apiVersion: azure[2] as string };
      body.model = call.azure.deployment;
    }
    calls.push(call);
    res.on("close", () => {
      if (!res.writableFinished) call.aborted = true;
    });
    const [mode, arg] = body.model.split(":");
    const error = (status: number, message: string) => {
      res.writeHead(status, { "content-type": "application/json", ...(status === 429 ? { "retry-after": "0" } : {}) });
      res.end(JSON.stringify({ error: { message, type: "fake_error", param: null, code: `fake_${status}` } }));
    };
    if (mode === "status") return error(Number(arg), `fake upstream status ${arg}`);
    if (mode === "flaky") {
      const n = flakyCounts.get(body.model) ?? 0;
      flakyCounts.set(body.model, n + 1);
      if (n < Number(arg)) return error(503, "fake upstream is overloaded");
    }
    if (mode === "hang") return; // the caller's timeout or abort ends it
    const delay = mode === "slow" ? Number(arg) : 0;
    const lastMessage = body.messages.at(-1);
    const toolCall =
      Array.isArray(body.tools) && body.tools.length > 0 && lastMessage?.role !== "tool"
        ? firstToolCall(body.tools)
        : undefined;
    const answer =
      lastMessage?.role === "tool" ? `tool said: ${String(lastMessage.content)}` : `echo: ${lastUser(body.messages)}`;
    const words =
      mode === "big" ? Array.from({ length: Number(arg) }, () => "x".repeat(8192)) : (answer.match(/\S+\s*/g) ?? []);
    const prompt = body.messages.reduce(
      (n, m) => n + String(typeof m.content === "string" ? m.content : "").split(/\s+/).length,
      0,
    );
    const usage =
      mode === "no-usage"
        ? undefined
        : { prompt_tokens: prompt, completion_tokens: words.length, total_tokens: prompt + words.length };
    const id = `chatcmpl-fake${calls.length}`;
    const created = Math.floor(Date.now() / 1000);
    if (body.stream !== true) {
      if (mode === "disconnect") {
        req.socket.destroy();
        return;
      }
      if (delay) await sleep(delay);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id,
          object: "chat.completion",
          created,
          model: body.model,
          choices: [
            toolCall
              ? {
                  index: 0,
                  message: { role: "assistant", content: null, refusal: null, tool_calls: [toolCall] },
                  logprobs: null,
                  finish_reason: "tool_calls",
                }
              : {
                  index: 0,
                  message: { role: "assistant", content: answer, refusal: null },
                  logprobs: null,
                  finish_reason: "stop",
                },
          ],
          ...(usage ? { usage } : {}),
        }),
      );
      call.completed = true;
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    const chunk = (delta: Record<string, unknown>, finish: string | null) =>
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(includeUsage ? { usage: null } : {}) })}\n\n`;
    const write = async (s: string) => {
      if (res.destroyed) return false;
      if (!res.write(s)) {
        call.blockedWrites++;
        await new Promise((r) => res.once("drain", r));
      }
      return !res.destroyed;
    };
    if (!(await write(chunk({ role: "assistant", content: toolCall ? null : "" }, null)))) return;
    if (toolCall) {
      const args = toolCall.function.arguments;
      const half = Math.floor(args.length / 2);
      const head = {
        index: 0,
        id: toolCall.id,
        type: "function",
        function: { name: toolCall.function.name, arguments: args.slice(0, half) },
      };
      await write(chunk({ tool_calls: [head] }, null));
      await write(chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(half) } }] }, null));
      await write(chunk({}, "tool_calls"));
      if (includeUsage && usage) {
        await write(
          `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [], usage })}\n\n`,
        );
      }
      res.end("data: [DONE]\n\n");
      call.completed = true;
      return;
    }
    let sent = 0;
    for (let i = 0; i < words.length; i += chunkWords) {
      if (mode === "disconnect" && sent >= Number(arg)) {
        await sleep(100); // let the chunks already written reach the caller, then drop
        req.socket.destroy();
        return;
      }
      if (delay) await sleep(delay);
      if (!(await write(chunk({ content: words.slice(i, i + chunkWords).join("") }, null)))) return;
      sent++;
    }
    if (!(await write(chunk({}, "stop")))) return;
    if (includeUsage && usage) {
      await write(
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [], usage })}\n\n`,
      );
    }
    res.end("data: [DONE]\n\n");
    call.completed = true;
  }

  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      handle(req, res, Buffer.concat(parts).toString("utf8")).catch((err: Error) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: err.message, type: "fake_error", param: null, code: null } }));
      });
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    baseURL: `${url}/v1`,
    calls,
    callsFor: (model) => calls.filter((c) => c.body.model === model),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
