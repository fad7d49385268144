// Agent: what a chat key runs. With a provider it calls an OpenAI-compatible LLM (optionally
// with retrieval); without one it answers extractively from its knowledge bases (works offline).
import { z } from "zod";
import { baseStatus, httpUrl, knowledgeId, secretKeyRef } from "./common.ts";

export const agentProvider = z
  .object({
    baseURL: httpUrl.describe("OpenAI-compatible API base, e.g. https://api.openai.com/v1"),
    model: z.string().min(1).max(256).describe("upstream model name sent to the provider"),
    apiKeySecretRef: secretKeyRef.optional().describe("Secret key holding the provider API key"),
    timeoutSeconds: z.int().min(1).max(600).default(60).describe("whole-request timeout for one upstream call"),
    maxRetries: z.int().min(0).max(5).default(2).describe("retries before the first byte (429, 5xx, connect errors)"),
  })
  .describe("OpenAI-compatible upstream; absent means the extractive agent");

export const agentParameters = z
  .object({
    temperature: z.number().min(0).max(2).optional(),
    topP: z.number().min(0).max(1).optional(),
    maxTokens: z.int().min(1).max(1_000_000).optional(),
    presencePenalty: z.number().min(-2).max(2).optional(),
    frequencyPenalty: z.number().min(-2).max(2).optional(),
    stop: z.array(z.string().max(256)).max(4).optional(),
  })
  .describe("Sampling defaults; a request's own fields win");

export const agentKnowledge = z
  .object({
    knowledgeIds: z.array(knowledgeId).min(1).max(32).describe("knowledge bases the agent retrieves from"),
    maxResults: z.int().min(1).max(50).default(5).describe("passages put in the prompt"),
    minSimilarity: z
      .number()
      .min(0)
      .max(1)
      .default(0.75)
      .describe(
        "passages scoring below this are not used; nothing left: the agent says it does not know. " +
          "0.75 is where relevant and unrelated passages separate on the search evaluation set",
      ),
    citations: z
      .enum(["field", "append", "none"])
      .default("field")
      .describe("field: a `citations` array on the response; append: a references list after the answer"),
  })
  .describe("Retrieval-augmented generation (RAG) over knowledge bases");

export const agentSpec = z.object({
  description: z.string().max(1024).optional(),
  provider: agentProvider.optional(),
  systemPrompt: z.string().max(100_000).optional(),
  parameters: agentParameters.optional(),
  knowledge: agentKnowledge.optional(),
});

export const agentStatus = z.object({
  ...baseStatus,
  mode: z.enum(["llm", "rag", "extractive"]).optional().describe("how the agent answers"),
});

export type AgentSpec = z.infer<typeof agentSpec>;
export type AgentStatus = z.infer<typeof agentStatus>;
