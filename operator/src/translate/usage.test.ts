import type { AccessChannel, Agent } from "@capstan/shared/api";
import { describe, expect, it } from "vitest";
import { budgetStatus, upstreamsStatus } from "./usage.ts";

const channel = (status?: AccessChannel["status"]): AccessChannel => ({
  apiVersion: "capstan.dev/v1alpha1",
  kind: "AccessChannel",
  metadata: { name: "c", namespace: "t" },
  spec: {
    channelName: "c",
    agentRef: { name: "a" },
    qpm: 100,
    keepHistory: false,
    budget: { tokens: 1000, period: "month", warnPercent: 80 },
  },
  ...(status ? { status } : {}),
});
const reading = (spent: number) => ({
  period: "2027-03-01",
  spent,
  tokens: 1000,
  resetsAt: "2027-04-01T00:00:00.000Z",
});

describe("budgetStatus", () => {
  it("spend in status; BudgetWarning False below warnPercent, True from it, BudgetExhausted at the budget", () => {
    expect(budgetStatus(channel(), reading(100))).toMatchObject({
      budget: { spent: 100, tokens: 1000, period: "2027-03-01" },
      condition: { type: "BudgetWarning", status: "False", reason: "WithinBudget" },
    });
    expect(budgetStatus(channel(), reading(800)).condition).toMatchObject({
      status: "True",
      reason: "BudgetNearlySpent",
    });
    expect(budgetStatus(channel(), reading(1000)).condition).toMatchObject({
      status: "True",
      reason: "BudgetExhausted",
    });
  });

  it("keeps the previous spend when the gateway does not answer; nothing without a budget", () => {
    const before = channel({
      budget: { period: "2027-03-01", spent: 900, tokens: 1000, resetsAt: "2027-04-01T00:00:00.000Z" },
    });
    expect(budgetStatus(before, undefined)).toMatchObject({ budget: { spent: 900 }, condition: { status: "True" } });
    const none = channel();
    delete none.spec.budget;
    expect(budgetStatus(none, reading(5))).toEqual({ budget: undefined, condition: undefined });
  });
});

describe("upstreamsStatus", () => {
  const agent: Agent = {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "Agent",
    metadata: { name: "a", namespace: "t" },
    spec: {
      upstreams: [
        {
          kind: "openai",
          baseURL: "https://a.example/v1",
          model: "m1",
          timeoutSeconds: 60,
          maxRetries: 0,
          name: "first",
        },
        { kind: "anthropic", baseURL: "https://b.example/v1", model: "m2", timeoutSeconds: 60, maxRetries: 0 },
      ],
    },
  };
  it("each upstream in spec order, closed when the gateway has not called it yet", () => {
    expect(
      upstreamsStatus(agent, [{ upstream: "first", model: "m1", circuit: "open", since: "2027-03-01T00:00:00.000Z" }]),
    ).toEqual([
      { name: "first", model: "m1", circuit: "open", since: "2027-03-01T00:00:00.000Z" },
      { name: "u1", model: "m2", circuit: "closed" },
    ]);
  });
});
