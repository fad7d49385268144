// The chat endpoint through the official openai SDK: non-stream and stream round trips against an
// LLM agent on a fake OpenAI-compatible provider, include_usage, models, auth (401 not retried),
// expiry at request time, and bad bodies (400/413 in the OpenAI shape).
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "./fake-openai.ts";
import {
  addResources,
  client,
  emptyView,
  metricValue,
  type RunningGateway,
  startGateway,
  uniqueNamespace,
} from "./helpers.ts";

let fake: FakeOpenAI;
let gw: RunningGateway;
let keys: Record<string, string>;
const ns = uniqueNamespace("chat");
const view = emptyView();

beforeAll(async () => {
  fake = await startFakeOpenAI();
  keys = addResources(
    view,
    ns,
    [
      { name: "main", agent: "assistant" },
      { name: "past", agent: "assistant", expiresAt: "2020-01-01T00:00:00Z" },
      { name: "orphan", agent: "missing-agent" },
    ],
    [
      {
        name: "assistant",
        spec: {
          provider: { baseURL: fake.baseURL, model: "echo", maxRetries: 0 },
          systemPrompt: "You are a test assistant.",
          parameters: { temperature: 0.3, maxTokens: 64 },
        },
      },
    ],
  );
  gw = await startGateway({ redisUrl: inject("redisUrl"), bodyLimitBytes: 64 * 1024 }, { view });
});

afterAll(async () => {
  await gw?.close();
  await fake?.close();
});

describe("chat completions", () => {
  it("answers a non-stream request in the chat.completion shape", async () => {
    const res = await client(gw.url, keys.main as string).chat.completions.create({
      model: "anything",
      messages: [{ role: "user", content: "hello there" }],
    });
    expect(res.id).toMatch(/^chatcmpl-[A-Za-z0-9_-]+$/);
    expect(res.object).toBe("chat.completion");
    expect(Number.isInteger(res.created)).toBe(true);
    expect(Math.abs(res.created - Date.now() / 1000)).toBeLessThan(600);
    expect(res.model).toBe("assistant");
    expect(res.choices).toHaveLength(1);
    expect(res.choices[0]?.index).toBe(0);
    expect(res.choices[0]?.message.role).toBe("assistant");
    expect(res.choices[0]?.message.content).toBe("echo: hello there");
    expect(res.choices[0]?.finish_reason).toBe("stop");
    expect(res.usage).toEqual({
      prompt_tokens: expect.any(Number),
      completion_tokens: 3,
      total_tokens: expect.any(Number),
    });
    // The upstream got the agent's system prompt, parameters and model, not the client's model.
    const call = fake.calls.at(-1);
    expect(call?.body.model).toBe("echo");
    expect(call?.body.messages[0]).toEqual({ role: "system", content: "You are a test assistant." });
    expect(call?.body.temperature).toBe(0.3);
    expect(call?.body.max_tokens).toBe(64);
  });

  it("lets the request's sampling fields win over the agent's", async () => {
    await client(gw.url, keys.main as string).chat.completions.create({
      model: "x",
      messages: [{ role: "user", content: "hi" }],
      temperature: 1.5,
      max_completion_tokens: 10,
      stop: ["\n\n"],
    });
    const body = fake.calls.at(-1)?.body;
    expect(body?.temperature).toBe(1.5);
    expect(body?.max_completion_tokens).toBe(10);
    expect(body?.max_tokens).toBeUndefined();
    expect(body?.stop).toEqual(["\n\n"]);
  });

  it("streams chat.completion.chunk events: role first, finish_reason last, usage when asked", async () => {
    const stream = await client(gw.url, keys.main as string).chat.completions.create({
      model: "anything",
      messages: [{ role: "user", content: "stream me please" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks) {
      expect(c.object).toBe("chat.completion.chunk");
      expect(c.id).toBe(chunks[0]?.id);
      expect(c.model).toBe("assistant");
    }
    expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text).toBe("echo: stream me please");
    const usageChunk = chunks.at(-1);
    expect(usageChunk?.choices).toEqual([]);
    expect(usageChunk?.usage?.completion_tokens).toBe(4);
    const finish = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finish).toHaveLength(1);
    expect(finish[0]?.choices[0]?.finish_reason).toBe("stop");
  });

  it("ends a stream with data: [DONE] and sends no usage chunk unless asked", async () => {
    const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys.main}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "raw" }], stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("100");
    expect(res.headers.get("x-request-id")).toMatch(/^req_[0-9a-f-]{36}$/);
    const text = await res.text();
    const events = text.split("\n\n").filter(Boolean);
    expect(events.every((e) => e.startsWith("data: "))).toBe(true);
    expect(events.at(-1)).toBe("data: [DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
    expect(chunks.some((c) => "usage" in c)).toBe(false);
    // The gateway always asks the provider for usage (to count tokens) even when the client did not.
    expect(fake.calls.at(-1)?.body.stream_options).toEqual({ include_usage: true });
  });

  it("lists the agent bound to the key as the only model", async () => {
    const sdk = client(gw.url, keys.main as string);
    const models = [];
    for await (const m of sdk.models.list()) models.push(m);
    expect(models.map((m) => m.id)).toEqual(["assistant"]);
    expect((await sdk.models.retrieve("assistant")).id).toBe("assistant");
    await expect(sdk.models.retrieve("gpt-4o")).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe("authentication", () => {
  it("rejects an unknown key with AuthenticationError, x-should-retry: false, and the SDK does not retry", async () => {
    const before = await metricValue(gw.url, "capstan_gateway_auth_failures_total", { reason: "invalid_api_key" });
    const sdk = client(gw.url, "cap_chat_not-a-real-key", { maxRetries: 3 });
    const err = await sdk.chat.completions
      .create({ model: "m", messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.status).toBe(401);
    expect(err.code).toBe("invalid_api_key");
    expect(err.headers.get("x-should-retry")).toBe("false");
    expect(err.message).not.toContain("not-a-real-key");
    const after = await metricValue(gw.url, "capstan_gateway_auth_failures_total", { reason: "invalid_api_key" });
    expect(after - before).toBe(1); // one request reached the gateway: no retries
    expect(gw.logs.join("\n")).not.toContain("not-a-real-key");
  });

  it("rejects a missing or malformed Authorization header", async () => {
    for (const headers of [{}, { authorization: "Basic abc" }, { authorization: "Bearer" }] as Record<
      string,
      string
    >[]) {
      const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }] }),
      });
      expect(res.status).toBe(401);
      const body = await res.json();
      expect(body.error).toMatchObject({ code: "missing_api_key", type: "invalid_request_error", param: null });
    }
  });

  it("rejects an expired key and flips to 401 when expiry passes mid-test", async () => {
    const past = await client(gw.url, keys.past as string)
      .chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
    expect(past).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(past.code).toBe("expired_api_key");

    // A channel that expires a few seconds from now, made here so earlier tests cannot eat the margin.
    const soon = addResources(
      view,
      ns,
      [{ name: "soon-expired", agent: "assistant", expiresAt: new Date(Date.now() + 5_000).toISOString() }],
      [],
    );
    const sdk = client(gw.url, soon["soon-expired"] as string);
    const ok = await sdk.chat.completions.create({ model: "m", messages: [{ role: "user", content: "before" }] });
    expect(ok.choices[0]?.message.content).toBe("echo: before");
    const expiresAt = Date.parse(view.get("AccessChannel", ns, "soon-expired")?.spec.expiresAt ?? "");
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now()) + 200));
    const err = await sdk.chat.completions
      .create({ model: "m", messages: [{ role: "user", content: "after" }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.code).toBe("expired_api_key");
  });

  it("answers 503 in the OpenAI shape when the channel's agent does not exist", async () => {
    const err = await client(gw.url, keys.orphan as string)
      .chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err.status).toBe(503);
    expect(err.code).toBe("agent_not_found");
  });
});

describe("validation", () => {
  const post = (body: string, contentType = "application/json") =>
    fetch(`${gw.url}/api/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys.main}`, "content-type": contentType },
      body,
    });

  const cases: Array<[string, string, string | null]> = [
    ["not JSON", "{nope", null],
    ["a JSON array", "[1,2]", null],
    ["a JSON string", '"hi"', null],
    ["null", "null", null],
    ["no model", JSON.stringify({ messages: [{ role: "user", content: "x" }] }), "model"],
    ["model not a string", JSON.stringify({ model: 4, messages: [{ role: "user", content: "x" }] }), "model"],
    ["no messages", JSON.stringify({ model: "m" }), "messages"],
    ["empty messages", JSON.stringify({ model: "m", messages: [] }), "messages"],
    ["messages not an array", JSON.stringify({ model: "m", messages: "hi" }), "messages"],
    ["bad role", JSON.stringify({ model: "m", messages: [{ role: "wizard", content: "x" }] }), "messages.[0].role"],
    ["missing content", JSON.stringify({ model: "m", messages: [{ role: "user" }] }), "messages.[0].content"],
    [
      "content a number",
      JSON.stringify({ model: "m", messages: [{ role: "user", content: 7 }] }),
      "messages.[0].content",
    ],
    [
      "bad content part",
      JSON.stringify({ model: "m", messages: [{ role: "user", content: [{ type: "text" }] }] }),
      "messages.[0].content.[0].text",
    ],
    [
      "tool without id",
      JSON.stringify({ model: "m", messages: [{ role: "tool", content: "r" }] }),
      "messages.[0].tool_call_id",
    ],
    [
      "stream not boolean",
      JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }], stream: "yes" }),
      "stream",
    ],
    [
      "temperature out of range",
      JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }], temperature: 9 }),
      "temperature",
    ],
    [
      "include_usage not boolean",
      JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }], stream_options: { include_usage: 1 } }),
      "stream_options.include_usage",
    ],
    ["empty body", "", null],
  ];

  for (const [what, body, param] of cases) {
    it(`400 for ${what}`, async () => {
      const res = await post(body);
      expect(res.status).toBe(400);
      expect(res.headers.get("x-should-retry")).toBe("false");
      const json = await res.json();
      expect(Object.keys(json)).toEqual(["error"]);
      expect(json.error.type).toBe("invalid_request_error");
      expect(typeof json.error.message).toBe("string");
      if (param) expect(json.error.param).toBe(param);
    });
  }

  it("415 naming application/json for a body sent as text/plain (http-semantics.test.ts has the rest)", async () => {
    const res = await post(JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }] }), "text/plain");
    expect(res.status).toBe(415);
    expect((await res.json()).error.message).toContain("application/json");
  });

  it("413 in the OpenAI shape for a body over the limit", async () => {
    const big = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(100 * 1024) }] });
    const res = await post(big);
    expect(res.status).toBe(413);
    const json = await res.json();
    expect(json.error).toMatchObject({ code: "request_too_large", type: "invalid_request_error" });
  });

  it("400 surfaces as the SDK's BadRequestError naming the param", async () => {
    const err = await client(gw.url, keys.main as string)
      .chat.completions.create({ model: "m", messages: [{ role: "nobody" as "user", content: "x" }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.param).toBe("messages.[0].role");
  });

  it("404 in the OpenAI shape for an unknown route", async () => {
    const res = await fetch(`${gw.url}/api/v1/nothing`);
    expect(res.status).toBe(404);
    expect((await res.json()).error.code).toBe("not_found");
  });

  it("accepts every role and content parts", async () => {
    const res = await client(gw.url, keys.main as string).chat.completions.create({
      model: "m",
      messages: [
        { role: "system", content: "s" },
        { role: "developer", content: "d" },
        {
          role: "user",
          content: [
            { type: "text", text: "part one" },
            { type: "text", text: "part two" },
          ],
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
        },
        { role: "tool", content: "result", tool_call_id: "c1" },
        { role: "user", content: "last" },
      ],
    });
    expect(res.choices[0]?.message.content).toBe("echo: last");
  });

  it("counts requests by mode and status, and by channel on the per-channel counter, in /metrics", async () => {
    const n = await metricValue(gw.url, "capstan_gateway_chat_requests_total", { mode: "llm", status: "200" });
    expect(n).toBeGreaterThan(0);
    const perChannel = await metricValue(gw.url, "capstan_gateway_channel_requests_total", {
      channel: `${ns}/main`,
      status: "200",
    });
    expect(perChannel).toBeGreaterThan(0);
  });
});
