import type { Agent } from "@capstan/shared/api";
import { describe, expect, it } from "vitest";
import { agentStatus } from "./agent.ts";

const now = new Date("2026-06-01T00:00:00Z");
const agent = (spec: Agent["spec"]): Agent => ({
  apiVersion: "capstan.dev/v1alpha1",
  kind: "Agent",
  metadata: { name: "a", generation: 2 },
  spec,
});
const provider = {
  kind: "openai" as const,
  baseURL: "https://llm.example/v1",
  model: "m",
  timeoutSeconds: 60,
  maxRetries: 2,
};
const knowledge = { knowledgeIds: ["kb_a"], maxResults: 5, minSimilarity: 0.6, citations: "field" as const };

describe("agentStatus", () => {
  it("modes: llm, rag, extractive", () => {
    expect(
      agentStatus({ agent: agent({ provider }), providerKey: undefined, missingKnowledgeIds: [], now }).status.mode,
    ).toBe("llm");
    expect(
      agentStatus({ agent: agent({ provider, knowledge }), providerKey: undefined, missingKnowledgeIds: [], now })
        .status.mode,
    ).toBe("rag");
    const ex = agentStatus({ agent: agent({ knowledge }), providerKey: undefined, missingKnowledgeIds: [], now });
    expect(ex.status.mode).toBe("extractive");
    expect(ex.ready).toBe(true);
  });

  it("not Ready with a missing provider key, a missing knowledge base, or nothing to answer from", () => {
    const noKey = agentStatus({
      agent: agent({ provider }),
      providerKey: { ok: false, reason: "SecretNotFound", message: "Secret s does not exist" },
      missingKnowledgeIds: [],
      now,
    });
    expect(noKey.status.conditions?.[0]).toMatchObject({ type: "Ready", status: "False", reason: "SecretNotFound" });
    const noKb = agentStatus({
      agent: agent({ knowledge }),
      providerKey: undefined,
      missingKnowledgeIds: ["kb_a"],
      now,
    });
    expect(noKb.status.conditions?.[0]).toMatchObject({
      status: "False",
      reason: "KnowledgeBaseNotFound",
      message: "no KnowledgeBase with id kb_a",
    });
    const empty = agentStatus({ agent: agent({}), providerKey: undefined, missingKnowledgeIds: [], now });
    expect(empty.status.conditions?.[0]).toMatchObject({ status: "False", reason: "NothingToAnswerFrom" });
    expect(empty.status.observedGeneration).toBe(2);
  });
});
