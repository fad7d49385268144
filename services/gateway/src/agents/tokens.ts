// Token counting for the local agents with a real BPE tokenizer (o200k_base, the encoding of the
// GPT-4o family; its ranks ship inside the gpt-tokenizer package, nothing is downloaded). Chat
// overhead follows OpenAI's published counting: 3 tokens per message, 3 to prime the reply.
import type { ChatMessage } from "../chat-request.ts";
import { textOf } from "../chat-request.ts";
import type { Usage } from "./types.ts";

type CountTokens = (text: string) => number;
let counter: Promise<CountTokens> | undefined;

/**
 * Loads the tokenizer once, on first use: its ranks take about 250 ms and 60 MB to load, which a
 * gateway whose providers report usage never needs (only the extractive agent and a reply
 * without `usage` count tokens), so nothing loads them at start-up.
 */
function loadTokenizer(): Promise<CountTokens> {
  counter ??= import("gpt-tokenizer/encoding/o200k_base").then((m) => (text: string) => m.countTokens(text));
  return counter;
}

const TOKENS_PER_MESSAGE = 3;
const REPLY_PRIMING = 3;

export async function countPromptTokens(messages: Pick<ChatMessage, "role" | "content">[]): Promise<number> {
  const count = await loadTokenizer();
  let total = REPLY_PRIMING;
  for (const m of messages) total += TOKENS_PER_MESSAGE + count(m.role) + count(textOf(m.content));
  return total;
}

export async function countTokens(text: string): Promise<number> {
  return (await loadTokenizer())(text);
}

export async function usageOf(messages: Pick<ChatMessage, "role" | "content">[], answer: string): Promise<Usage> {
  const prompt = await countPromptTokens(messages);
  const completion = await countTokens(answer);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
