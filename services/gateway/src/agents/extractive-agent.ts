// The extractive agent (no provider): answers from the best passages of the Agent's knowledge
// bases, offline. The answer is built once and streamed word by word when asked to stream; usage
// is counted with the real tokenizer.
import { lastUserText } from "../chat-request.ts";
import { retrieveCitations } from "./knowledge.ts";
import { extractiveAnswer, referencesText } from "./passages.ts";
import type { Retriever } from "./retrieval.ts";
import { usageOf } from "./tokens.ts";
import type { AgentContext, ChatAgent, Citation, Completion, StreamPiece } from "./types.ts";

export const NO_KNOWLEDGE = "This agent has no knowledge bases configured, so it cannot answer.";

export class ExtractiveAgent implements ChatAgent {
  readonly mode = "extractive" as const;
  private readonly retriever: Retriever;

  constructor(retriever: Retriever) {
    this.retriever = retriever;
  }

  private async answer(ctx: AgentContext): Promise<{ content: string; citations: Citation[]; field: boolean }> {
    const knowledge = ctx.agent.spec.knowledge;
    if (!knowledge) return { content: NO_KNOWLEDGE, citations: [], field: false };
    const found = await retrieveCitations(ctx, this.retriever);
    const cite = knowledge.citations !== "none";
    const { content, citations } = extractiveAnswer(lastUserText(ctx.request.messages), found, { mark: cite });
    if (knowledge.citations === "append")
      return { content: content + referencesText(citations), citations, field: false };
    return { content, citations, field: knowledge.citations === "field" };
  }

  private promptOf(ctx: AgentContext) {
    const system = ctx.agent.spec.systemPrompt;
    return system ? [{ role: "system" as const, content: system }, ...ctx.request.messages] : ctx.request.messages;
  }

  async complete(ctx: AgentContext): Promise<Completion> {
    const { content, citations, field } = await this.answer(ctx);
    return {
      choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop", logprobs: null }],
      usage: await usageOf(this.promptOf(ctx), content),
      ...(field ? { citations } : {}),
    };
  }

  async *stream(ctx: AgentContext): AsyncGenerator<StreamPiece> {
    const { content, citations, field } = await this.answer(ctx);
    if (field) yield { kind: "citations", citations };
    const words = content.match(/\S+\s*|\s+/g) ?? [];
    for (let i = 0; i < words.length; i += 4) {
      if (ctx.signal.aborted) return;
      yield { kind: "delta", index: 0, delta: { content: words.slice(i, i + 4).join("") }, finish_reason: null };
    }
    yield { kind: "delta", index: 0, delta: {}, finish_reason: "stop" };
    yield { kind: "usage", usage: await usageOf(this.promptOf(ctx), content) };
  }
}
