// Retrieval for RAG and extractive agents: the last user message is the query, the Agent's
// knowledge settings bound it, and the best passages become numbered citations. In a sampled
// trace the step is a GenAI retrieval span: "retrieval {gen_ai.data_source.id}" (the knowledge id
// when there is one, else plain "retrieval"), kind CLIENT (search is another service), with
// gen_ai.operation.name=retrieval, gen_ai.provider.name=capstan and gen_ai.request.top_k; the
// HTTP call to search is its child.
import { withSpan } from "@capstan/shared";
import { SpanKind } from "@opentelemetry/api";
import { lastUserText } from "../chat-request.ts";
import { recordingNow, tracerOf } from "../tracer.ts";
import { rankPassages, toCitations } from "./passages.ts";
import type { Retriever } from "./retrieval.ts";
import type { AgentContext, Citation } from "./types.ts";

export async function retrieveCitations(ctx: AgentContext, retriever: Retriever): Promise<Citation[]> {
  const knowledge = ctx.agent.spec.knowledge;
  const text = lastUserText(ctx.request.messages).trim();
  if (!knowledge || text === "") return [];
  const retrieve = async () => {
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
    return { results, citations: toCitations(rankPassages(results, knowledge.maxResults)) };
  };
  if (!recordingNow()) return (await retrieve()).citations;
  const ids = knowledge.knowledgeIds;
  const name = ids.length === 1 ? `retrieval ${ids[0]}` : "retrieval";
  const attributes = {
    "gen_ai.operation.name": "retrieval",
    "gen_ai.provider.name": "capstan",
    "gen_ai.request.top_k": knowledge.maxResults,
    ...(ids.length === 1 ? { "gen_ai.data_source.id": ids[0] } : {}),
    "capstan.knowledge_ids": ids.join(","),
  };
  return withSpan(
    tracerOf(),
    name,
    async (span) => {
      const { results, citations } = await retrieve();
      span.setAttribute("capstan.passages", results.length);
      return citations;
    },
    { kind: SpanKind.CLIENT, attributes },
  );
}
