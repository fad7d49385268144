import { describe, expect, it } from "vitest";
import { countPromptTokens, countTokens, usageOf } from "./tokens.ts";

describe("token counting (o200k_base)", () => {
  it("counts with the real BPE ranks", async () => {
    expect(await countTokens("hello world")).toBe(2);
    expect(await countTokens("")).toBe(0);
    expect(await countTokens("tokenization is fun")).toBeGreaterThan(2);
  });

  it("adds OpenAI's chat overhead: 3 per message (+ role) and 3 to prime the reply", async () => {
    const n = await countPromptTokens([{ role: "user", content: "hello world" }]);
    expect(n).toBe(3 + 3 + 1 + 2);
  });

  it("builds a usage object whose total is the sum", async () => {
    const u = await usageOf([{ role: "user", content: "hi" }], "hello world");
    expect(u.completion_tokens).toBe(2);
    expect(u.total_tokens).toBe(u.prompt_tokens + 2);
  });
});
