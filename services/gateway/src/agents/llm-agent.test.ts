import { agentSpec } from "@capstan/shared/api";
import { describe, expect, it } from "vitest";
import { parseChatRequest } from "../chat-request.ts";
import { upstreamBody } from "./llm-agent.ts";
import { toCitations } from "./passages.ts";

const spec = agentSpec.parse({
  provider: { baseURL: "http://127.0.0.1:1/v1", model: "gpt-test" },
  systemPrompt: "Be brief.",
  parameters: { temperature: 0.2, maxTokens: 100, topP: 0.9, stop: ["END"] },
  knowledge: { knowledgeIds: ["kb_a"], citations: "field" },
});

describe("upstreamBody", () => {
  it("puts the system prompt first and the agent's parameters as defaults (no model: each upstream sets its own)", () => {
    const body = upstreamBody(
      spec,
      parseChatRequest({ model: "ignored", messages: [{ role: "user", content: "q" }] }),
      undefined,
      false,
    );
    expect(body).not.toHaveProperty("model");
    expect(body).toMatchObject({
      temperature: 0.2,
      top_p: 0.9,
      max_tokens: 100,
      stop: ["END"],
      stream: false,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "q" },
      ],
    });
    expect(body).not.toHaveProperty("stream_options");
  });

  it("lets request fields win and prefers max_completion_tokens", () => {
    const req = parseChatRequest({
      model: "m",
      messages: [{ role: "user", content: "q" }],
      temperature: 1,
      max_completion_tokens: 5,
      tools: [{ type: "function", function: { name: "f", parameters: {} } }],
    });
    const body = upstreamBody(spec, req, undefined, true);
    expect(body.temperature).toBe(1);
    expect(body.max_completion_tokens).toBe(5);
    expect(body).not.toHaveProperty("max_tokens");
    expect(body.tools).toHaveLength(1);
    expect(body.stream_options).toEqual({ include_usage: true });
  });

  it("adds the retrieved passages as a second system message", () => {
    const citations = toCitations([
      {
        knowledgeId: "kb_a",
        docsName: "Guide",
        docsId: "d1",
        embeddingId: "e1",
        text: "The answer is 42.",
        score: 0.9,
        rerankedScore: 0.9,
        source: "vector",
        metadata: { knowledgeId: "kb_a", docsId: "d1", docsName: "Guide", chunkIndex: 0, totalChunks: 1 },
      },
    ]);
    const body = upstreamBody(
      spec,
      parseChatRequest({ model: "m", messages: [{ role: "user", content: "q" }] }),
      citations,
      false,
    );
    const messages = body.messages as Array<{ role: string; content: string }>;
    expect(messages).toHaveLength(3);
    expect(messages[1]?.role).toBe("system");
    expect(messages[1]?.content).toContain("[1] Guide (kb_a)\nThe answer is 42.");
  });
});
