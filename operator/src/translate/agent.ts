// Pure status of an Agent: which mode it answers in, whether its provider key and knowledge bases
// exist, and Ready when it can answer.
import { type Agent, type AgentStatus, agentUpstreams } from "@capstan/shared/api";
import { type ConditionInput, compact, setConditions } from "../controller/conditions.ts";
import { knowledgeFound } from "./common.ts";

export type SecretCheck = { ok: true } | { ok: false; reason: string; message: string };

export function agentMode(agent: Agent): "llm" | "rag" | "extractive" {
  if (!agent.spec.provider && !agent.spec.upstreams) return "extractive";
  return agent.spec.knowledge ? "rag" : "llm";
}

export function deriveAgentStatus(f: {
  agent: Agent;
  providerKey: SecretCheck | undefined;
  missingKnowledgeIds: string[];
  now: Date;
  /** Each upstream's breaker (translate/usage.ts), for an Agent with spec.upstreams. */
  upstreams?: AgentStatus["upstreams"];
}): { status: AgentStatus; ready: boolean } {
  const { agent } = f;
  const mode = agentMode(agent);
  const upstreams = agentUpstreams(agent.spec);
  const provider = upstreams[0];
  const providerCondition: ConditionInput = !provider
    ? {
        type: "ProviderReady",
        status: "True",
        reason: "NoProvider",
        message: "no provider: answers extractively from knowledge bases",
      }
    : f.providerKey && !f.providerKey.ok
      ? { type: "ProviderReady", status: "False", reason: f.providerKey.reason, message: f.providerKey.message }
      : {
          type: "ProviderReady",
          status: "True",
          reason: "ProviderConfigured",
          message:
            upstreams.length > 1
              ? `${upstreams.length} upstreams: ${upstreams.map((u) => `${u.name} (${u.kind} ${u.model})`).join(", ")}`
              : `${provider.model} at ${provider.baseURL}${provider.apiKeySecretRef ? "" : " (no API key)"}`,
        };
  const ids = agent.spec.knowledge?.knowledgeIds ?? [];
  const missing = f.missingKnowledgeIds;
  const knowledgeCondition: ConditionInput =
    ids.length === 0
      ? {
          type: "KnowledgeResolved",
          status: "True",
          reason: "NoKnowledge",
          message: "the agent uses no knowledge base",
        }
      : knowledgeFound("KnowledgeResolved", "knowledge", ids, missing);
  let ready: ConditionInput;
  if (providerCondition.status === "False") ready = { ...providerCondition, type: "Ready" };
  else if (knowledgeCondition.status === "False") ready = { ...knowledgeCondition, type: "Ready" };
  else if (mode === "extractive" && ids.length === 0)
    ready = {
      type: "Ready",
      status: "False",
      reason: "NothingToAnswerFrom",
      message: "an agent without a provider answers from knowledge bases: set spec.knowledge or spec.provider",
    };
  else ready = { type: "Ready", status: "True", reason: "Ready", message: `answers in ${mode} mode` };
  const conditions = setConditions(
    agent.status?.conditions,
    [ready, providerCondition, knowledgeCondition],
    agent.metadata.generation,
    f.now,
  );
  return {
    status: compact({ observedGeneration: agent.metadata.generation, conditions, mode, upstreams: f.upstreams }),
    ready: ready.status === "True",
  };
}
