// Retrieval for RAG and extractive agents: the last user message is the query, the Agent's
// knowledge settings bound it, and the best passages become numbered citations.

import { withSpan } from "@capstan/shared";
import { trace } from "@opentelemetry/api";
import { lastUserText } from "../chat-request.ts";
import { rankPassages, toCitations } from "./passages.ts";
import type { Retriever } from "./retrieval.ts";
import type { AgentContext, Citation } from "./types.ts";

export async function retrieveCitations(ctx: AgentContext, retriever: Retriever): Promise<Citation[]> {
  const knowledge = ctx.agent.spec.knowledge;
  const text = lastUserText(ctx.request.messages).trim();
  if (!knowledge || text === "") return [];
  return withSpan(trace.getTracer("capstan-gateway"), "retrieval", async (span) => {
    span.setAttribute("capstan.knowledge_ids", knowledge.knowledgeIds.join(","));
    const results = await retriever.search(
      {
        namespace: ctx.agent.metadata.namespace || "default",
        knowledgeIds: knowledge.knowledgeIds,
        text: text.slice(0, 8_000),
        maxResults: knowledge.maxResults,
        minSimilarity: knowledge.minSimilarity,
      },
      ctx.signal,
    );
    span.setAttribute("capstan.passages", results.length);
    return toCitations(rankPassages(results, knowledge.maxResults));
  });
}
