import { describe, expect, it } from "vitest";
import { chatRequest, isCommonChatRequest, lastUserText, paramOf, parseChatRequest, textOf } from "./chat-request.ts";
import { GatewayError } from "./errors.ts";

const ok = { model: "m", messages: [{ role: "user", content: "hi" }] };

function paramFor(body: unknown): string | null {
  try {
    parseChatRequest(body);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).status).toBe(400);
    return (err as GatewayError).param;
  }
  throw new Error("expected a 400");
}

describe("parseChatRequest", () => {
  it("accepts a minimal request and keeps sampling fields", () => {
    const r = parseChatRequest({ ...ok, temperature: 0.5, stream: true, stream_options: { include_usage: true } });
    expect(r.temperature).toBe(0.5);
    expect(r.stream_options?.include_usage).toBe(true);
  });

  it("ignores unknown top-level fields", () => {
    expect(parseChatRequest({ ...ok, some_new_field: 1 })).not.toHaveProperty("some_new_field");
  });

  it("names the offending param the way OpenAI does", () => {
    expect(paramFor({ messages: ok.messages })).toBe("model");
    expect(paramFor({ model: "m", messages: [] })).toBe("messages");
    expect(paramFor({ model: "m", messages: [{ role: "x", content: "c" }] })).toBe("messages.[0].role");
    expect(paramFor({ model: "m", messages: [ok.messages[0], { role: "user" }] })).toBe("messages.[1].content");
    expect(paramFor({ ...ok, top_p: 2 })).toBe("top_p");
    expect(paramFor({ ...ok, stop: ["a", "b", "c", "d", "e"] })).toBe("stop");
    expect(paramFor([ok])).toBeNull();
    expect(paramFor("text")).toBeNull();
  });

  it("requires content or tool_calls on assistant messages", () => {
    expect(paramFor({ model: "m", messages: [{ role: "assistant" }] })).toBe("messages.[0].content");
    const withTools = {
      model: "m",
      messages: [
        { role: "assistant", tool_calls: [{ id: "1", type: "function", function: { name: "f", arguments: "{}" } }] },
      ],
    };
    expect(parseChatRequest(withTools).messages).toHaveLength(1);
  });

  it("says which param is wrong in the message", () => {
    expect(() => parseChatRequest({ ...ok, temperature: "hot" })).toThrow(/'temperature'/);
  });
});

describe("the fast path for common requests", () => {
  const common = [
    ok,
    { ...ok, stream: true, stream_options: { include_usage: true }, temperature: 0, top_p: 1, max_tokens: 5 },
    { ...ok, stream: null, temperature: null, n: 2, seed: -3, user: "u", logprobs: false, parallel_tool_calls: true },
    { ...ok, presence_penalty: -2, frequency_penalty: 2, max_completion_tokens: 9, stream_options: null },
    {
      model: "m",
      messages: [
        { role: "system", content: "s" },
        { role: "developer", content: "d", name: "dev" },
        { role: "user", content: "" },
        { role: "assistant", content: "a" },
      ],
    },
  ];

  it("takes only bodies the schema returns unchanged, and returns what the schema would", () => {
    for (const body of common) {
      expect(isCommonChatRequest(body)).toBe(true);
      expect(parseChatRequest(body)).toEqual(chatRequest.parse(body));
    }
  });

  it("leaves everything else to the schema", () => {
    const others: Record<string, unknown>[] = [
      { ...ok, some_new_field: 1 },
      { ...ok, stream_options: { include_usage: true, extra: 1 } },
      { ...ok, temperature: 3 },
      { ...ok, max_tokens: 1.5 },
      { ...ok, n: 0 },
      { ...ok, user: null },
      { ...ok, model: "" },
      { model: "m", messages: [] },
      { model: "m", messages: [{ role: "user", content: "hi", extra: 1 }] },
      { model: "m", messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }] },
      { model: "m", messages: [{ role: "tool", content: "x", tool_call_id: "1" }] },
      { model: "m", messages: [{ role: "user", content: "hi", name: "" }] },
      { ...ok, constructor: 1 },
      { ...ok, tools: [] },
    ];
    for (const body of others) expect(isCommonChatRequest(body)).toBe(false);
  });
});

describe("message text", () => {
  it("joins text parts and ignores others", () => {
    expect(
      textOf([
        { type: "text", text: "a" },
        { type: "image_url", image_url: { url: "data:," } },
        { type: "text", text: "b" },
      ]),
    ).toBe("a\nb");
    expect(textOf(null)).toBe("");
  });

  it("finds the last user message", () => {
    const r = parseChatRequest({
      model: "m",
      messages: [
        { role: "user", content: "first" },
        { role: "assistant", content: "reply" },
        { role: "user", content: "second" },
        { role: "assistant", content: "again" },
      ],
    });
    expect(lastUserText(r.messages)).toBe("second");
  });

  it("formats param paths", () => {
    expect(paramOf(["messages", 2, "content", 0, "text"])).toBe("messages.[2].content.[0].text");
    expect(paramOf([])).toBeNull();
  });
});
