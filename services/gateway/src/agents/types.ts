// What every agent (LLM, RAG, extractive) gives the chat route: a whole completion, or a stream of
// pieces the route frames as chat.completion.chunk events. Agents never touch HTTP replies.
import type { Agent } from "@capstan/shared/api";
import type { ResolvedChannel } from "../channels.ts";
import type { ChatRequest } from "../chat-request.ts";

export type AgentMode = "llm" | "rag" | "extractive";

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  [extra: string]: unknown;
}

/** A passage the answer used, as returned on the response's `citations` field. */
export interface Citation {
  index: number;
  knowledgeId: string;
  docsId: string;
  docsName: string;
  embeddingId: string;
  chunkIndex: number | null;
  score: number;
  rerankedScore: number | null;
  source: string;
  text: string;
}

export interface CompletionChoice {
  index: number;
  message: { role: "assistant"; content: string | null; [extra: string]: unknown };
  finish_reason: string | null;
  logprobs: unknown;
}

export interface Completion {
  choices: CompletionChoice[];
  usage: Usage;
  citations?: Citation[];
}

/** One step of a streamed answer: a delta of one choice, the usage, or the citations. */
export type StreamPiece =
  | {
      kind: "delta";
      index: number;
      delta: { content?: string; [extra: string]: unknown };
      finish_reason: string | null;
      logprobs?: unknown;
    }
  | { kind: "usage"; usage: Usage }
  | { kind: "citations"; citations: Citation[] };

export interface AgentContext {
  request: ChatRequest;
  channel: ResolvedChannel;
  agent: Agent;
  /** Aborted when the client goes away or the request ends. */
  signal: AbortSignal;
  /** Set by the agent: the upstream that answered and its model (usage accounting). */
  served?: { upstream: string; model: string };
}

export interface ChatAgent {
  readonly mode: AgentMode;
  complete(ctx: AgentContext): Promise<Completion>;
  stream(ctx: AgentContext): AsyncIterable<StreamPiece>;
}

/** Which agent runs for an Agent resource: no provider nor upstreams → extractive; with knowledge → rag. */
export function modeOf(agent: Agent): AgentMode {
  if (!agent.spec.provider && !agent.spec.upstreams) return "extractive";
  return agent.spec.knowledge ? "rag" : "llm";
}
