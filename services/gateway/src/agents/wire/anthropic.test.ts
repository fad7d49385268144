import { describe, expect, it } from "vitest";
import { parseChatRequest } from "../../chat-request.ts";
import { fromAnthropicMessage, toAnthropicRequest } from "./anthropic.ts";
import { fromAnthropicStream } from "./anthropic-stream.ts";

async function* of(...events: object[]): AsyncGenerator<string> {
  for (const e of events) yield JSON.stringify(e);
}

describe("toAnthropicRequest", () => {
  it("moves system text to `system`, merges tool results into one user turn, maps tools and limits", () => {
    const req = parseChatRequest({
      model: "m",
      messages: [
        { role: "system", content: "S1" },
        { role: "developer", content: "S2" },
        {
          role: "user",
          content: [
            { type: "text", text: "hi" },
            { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
          ],
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "a", type: "function", function: { name: "f", arguments: '{"x":1}' } },
            { id: "b", type: "function", function: { name: "f", arguments: "not json" } },
          ],
        },
        { role: "tool", tool_call_id: "a", content: "one" },
        { role: "tool", tool_call_id: "b", content: "two" },
      ],
      temperature: 1.5,
      stop: "END",
      tools: [{ type: "function", function: { name: "f", description: "d", parameters: { type: "object" } } }],
      tool_choice: "required",
      parallel_tool_calls: false,
      user: "u1",
    });
    const out = toAnthropicRequest({ ...req, model: "claude" });
    expect(out).toEqual({
      model: "claude",
      max_tokens: 4096,
      system: "S1\n\nS2",
      temperature: 1,
      stop_sequences: ["END"],
      tools: [{ name: "f", description: "d", input_schema: { type: "object" } }],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      metadata: { user_id: "u1" },
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "hi" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
          ],
        },
        {
          role: "assistant",
          content: [
            { type: "tool_use", id: "a", name: "f", input: { x: 1 } },
            { type: "tool_use", id: "b", name: "f", input: {} },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "a", content: "one" },
            { type: "tool_result", tool_use_id: "b", content: "two" },
          ],
        },
      ],
    });
  });

  it("prefers max_completion_tokens, then max_tokens", () => {
    const body = { model: "c", messages: [{ role: "user", content: "q" }], max_tokens: 10, max_completion_tokens: 5 };
    expect(toAnthropicRequest(body).max_tokens).toBe(5);
  });
});

describe("fromAnthropicMessage", () => {
  it("text and tool_use blocks, stop reasons and usage (cache reads count as prompt)", () => {
    const out = fromAnthropicMessage({
      id: "msg_1",
      model: "claude",
      content: [
        { type: "text", text: "Let me look." },
        { type: "tool_use", id: "toolu_1", name: "f", input: { city: "Paris" } },
      ],
      stop_reason: "tool_use",
      usage: { input_tokens: 10, output_tokens: 3, cache_read_input_tokens: 5 },
    });
    expect(out.choices).toEqual([
      {
        index: 0,
        logprobs: null,
        finish_reason: "tool_calls",
        message: {
          role: "assistant",
          content: "Let me look.",
          refusal: null,
          tool_calls: [{ id: "toolu_1", type: "function", function: { name: "f", arguments: '{"city":"Paris"}' } }],
        },
      },
    ]);
    expect(out.usage).toEqual({
      prompt_tokens: 15,
      completion_tokens: 3,
      total_tokens: 18,
      prompt_tokens_details: { cached_tokens: 5 },
    });
    expect(fromAnthropicMessage({ content: [], stop_reason: "max_tokens" }).choices).toMatchObject([
      { finish_reason: "length" },
    ]);
  });
});

describe("fromAnthropicStream", () => {
  it("translates the named events into chunks, tool input deltas included, and ends with usage", async () => {
    const chunks: Array<Record<string, unknown>> = [];
    for await (const c of fromAnthropicStream(
      of(
        {
          type: "message_start",
          message: { id: "msg_1", model: "claude", usage: { input_tokens: 7, output_tokens: 1 } },
        },
        { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
        { type: "ping" },
        { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi" } },
        { type: "content_block_stop", index: 0 },
        {
          type: "content_block_start",
          index: 1,
          content_block: { type: "tool_use", id: "toolu_1", name: "f", input: {} },
        },
        { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '{"ci' } },
        { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: 'ty":"P"}' } },
        { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 9 } },
        { type: "message_stop" },
      ),
      1,
    ))
      chunks.push(JSON.parse(c) as Record<string, unknown>);
    const deltas = chunks.map((c) => (c.choices as Array<{ delta: unknown; finish_reason: unknown }>)[0]);
    expect(deltas).toEqual([
      { index: 0, logprobs: null, finish_reason: null, delta: { role: "assistant", content: "" } },
      { index: 0, logprobs: null, finish_reason: null, delta: { content: "Hi" } },
      {
        index: 0,
        logprobs: null,
        finish_reason: null,
        delta: { tool_calls: [{ index: 0, id: "toolu_1", type: "function", function: { name: "f", arguments: "" } }] },
      },
      {
        index: 0,
        logprobs: null,
        finish_reason: null,
        delta: { tool_calls: [{ index: 0, function: { arguments: '{"ci' } }] },
      },
      {
        index: 0,
        logprobs: null,
        finish_reason: null,
        delta: { tool_calls: [{ index: 0, function: { arguments: 'ty":"P"}' } }] },
      },
      { index: 0, logprobs: null, finish_reason: "tool_calls", delta: {} },
      undefined,
    ]);
    expect(chunks.at(-1)).toMatchObject({
      id: "msg_1",
      model: "claude",
      usage: { prompt_tokens: 7, completion_tokens: 9 },
    });
  });

  it("an error event is the gateway's upstream_error", async () => {
    const run = async () => {
      for await (const _ of fromAnthropicStream(
        of({ type: "error", error: { type: "overloaded_error", message: "x" } }),
        1,
      ));
    };
    await expect(run()).rejects.toMatchObject({ code: "upstream_error" });
  });
});
