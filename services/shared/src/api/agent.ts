// Agent: what a chat key runs. With a provider (or an ordered list of upstreams, with fallback
// and a circuit breaker each) it calls an LLM (optionally with retrieval): OpenAI-compatible,
// Azure OpenAI or Anthropic; without one it answers extractively from its knowledge bases.
import { z } from "zod";
import { baseStatus, httpUrl, knowledgeId, secretKeyRef, timestamp } from "./common.ts";

/** The wire protocol an upstream speaks. */
export const UPSTREAM_KINDS = ["openai", "azure", "anthropic"] as const;
export type UpstreamKind = (typeof UPSTREAM_KINDS)[number];

const upstreamFields = {
  kind: z
    .enum(UPSTREAM_KINDS)
    .default("openai")
    .describe(
      "openai: any OpenAI-compatible API (POST {baseURL}/chat/completions, Bearer key); azure: Azure OpenAI " +
        "(POST {baseURL}/openai/deployments/{deployment}/chat/completions?api-version=..., api-key header); " +
        "anthropic: the Messages API (POST {baseURL}/messages, x-api-key), translated both ways",
    ),
  baseURL: httpUrl.describe(
    "API base: https://api.openai.com/v1, https://<resource>.openai.azure.com, https://api.anthropic.com/v1",
  ),
  model: z.string().min(1).max(256).describe("upstream model name sent to the provider"),
  deployment: z
    .string()
    .min(1)
    .max(256)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/)
    .optional()
    .describe("azure: the deployment name in the URL; absent: the model name"),
  apiVersion: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9._-]+$/)
    .optional()
    .describe(
      "azure: the api-version query parameter (default 2024-10-21); anthropic: anthropic-version (default 2023-06-01)",
    ),
  apiKeySecretRef: secretKeyRef.optional().describe("Secret key holding the provider API key"),
  timeoutSeconds: z.int().min(1).max(600).default(60).describe("whole-request timeout for one upstream call"),
};

export const agentProvider = z
  .object({
    ...upstreamFields,
    maxRetries: z.int().min(0).max(5).default(2).describe("retries before the first byte (429, 5xx, connect errors)"),
  })
  .describe("The one upstream of a single-provider Agent; absent (and no upstreams) means the extractive agent");

export const agentUpstream = z
  .object({
    name: z
      .string()
      .min(1)
      .max(63)
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
      .optional()
      .describe("label in metrics and status; default: the upstream's position, u0, u1, ..."),
    ...upstreamFields,
    maxRetries: z
      .int()
      .min(0)
      .max(5)
      .default(0)
      .describe("retries on this upstream before falling to the next (default 0: fall through at once)"),
    weight: z
      .int()
      .min(0)
      .max(1000)
      .optional()
      .describe(
        "share of first attempts among the upstreams that have a weight (absent everywhere: always the first); " +
          "a weight of 0 makes a fallback-only upstream",
      ),
  })
  .describe("One upstream of an ordered list");

export const agentRouting = z
  .object({
    breakerFailures: z
      .int()
      .min(1)
      .max(100)
      .default(5)
      .describe("consecutive failed calls (429, 5xx, timeouts, connection errors) that open an upstream's breaker"),
    breakerOpenSeconds: z
      .int()
      .min(1)
      .max(3600)
      .default(30)
      .describe("how long an open breaker skips its upstream before one trial call"),
  })
  .describe("Fallback and circuit breaking across spec.upstreams");

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

export const agentSpec = z
  .object({
    description: z.string().max(1024).optional(),
    provider: agentProvider.optional(),
    upstreams: z
      .array(agentUpstream)
      .min(1)
      .max(8)
      .optional()
      .describe(
        "several upstreams, tried in order: a 429, 5xx, timeout or connection error before the first byte " +
          "falls to the next; a stream that has sent bytes is never switched. Instead of provider",
      ),
    routing: agentRouting.optional(),
    prices: z
      .array(
        z.object({
          model: z
            .string()
            .min(1)
            .max(256)
            .describe("an upstream model name, as in provider.model / upstreams[].model"),
          promptPerMillion: z.number().min(0).max(1e6).describe("price of one million prompt tokens"),
          completionPerMillion: z.number().min(0).max(1e6).describe("price of one million completion tokens"),
          currency: z
            .string()
            .regex(/^[A-Z]{3}$/)
            .default("USD")
            .describe("ISO 4217 code, for display"),
        }),
      )
      .max(32)
      .optional()
      .describe("prices per model: the gateway's usage API and the console show a cost beside the tokens"),
    systemPrompt: z.string().max(100_000).optional(),
    parameters: agentParameters.optional(),
    knowledge: agentKnowledge.optional(),
  })
  .meta({
    "x-kubernetes-validations": [
      { rule: "!(has(self.provider) && has(self.upstreams))", message: "set provider or upstreams, not both" },
    ],
  });

export const upstreamStatus = z.object({
  name: z.string().describe("the upstream's name (u0, u1, ... when unnamed)"),
  model: z.string(),
  circuit: z
    .enum(["closed", "open", "half_open"])
    .describe("its circuit breaker, as the gateway replica the operator asked reports it (each replica has its own)"),
  since: timestamp.optional().describe("when the breaker last changed"),
});

export const agentStatus = z.object({
  ...baseStatus,
  mode: z.enum(["llm", "rag", "extractive"]).optional().describe("how the agent answers"),
  upstreams: z.array(upstreamStatus).optional().describe("each upstream's breaker (agents with spec.upstreams)"),
});

export type AgentUpstream = z.infer<typeof agentUpstream>;

/**
 * Every upstream of an Agent in order, each with its name: spec.upstreams, else spec.provider as a
 * list of one (named u0), else none (the extractive agent).
 */
export function agentUpstreams(spec: AgentSpec): Array<AgentUpstream & { name: string }> {
  if (spec.upstreams) return spec.upstreams.map((u, i) => ({ ...u, name: u.name ?? `u${i}` }));
  if (spec.provider) return [{ ...spec.provider, name: "u0" }];
  return [];
}

export type AgentSpec = z.infer<typeof agentSpec>;
export type AgentStatus = z.infer<typeof agentStatus>;
