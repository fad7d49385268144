// Pure: the status parts that come from the gateway's readings. An AccessChannel's budget spend
// and its BudgetWarning condition (True once warnPercent of the budget is spent, reason
// BudgetExhausted at 100 %); an Agent's upstream breakers in spec order. Without a reading (the
// gateway did not answer) the previous values stay.
import type { AccessChannel, AccessChannelStatus, Agent, AgentStatus } from "@capstan/shared/api";
import { agentUpstreams } from "@capstan/shared/api";
import type { ConditionInput } from "../controller/conditions.ts";
import { findCondition } from "../controller/conditions.ts";
import type { BudgetReading, UpstreamReading } from "../ingest/gateway-usage.ts";

export function budgetStatus(
  channel: AccessChannel,
  reading: BudgetReading | undefined,
): { budget: AccessChannelStatus["budget"]; condition: ConditionInput | undefined } {
  const spec = channel.spec.budget;
  if (!spec) return { budget: undefined, condition: undefined };
  const previous = channel.status?.budget;
  const budget = reading
    ? { period: reading.period, spent: reading.spent, tokens: spec.tokens, resetsAt: reading.resetsAt }
    : previous;
  if (!budget) {
    const kept = findCondition(channel.status?.conditions, "BudgetWarning");
    return { budget: undefined, condition: kept };
  }
  const percent = Math.floor((budget.spent / spec.tokens) * 100);
  const condition: ConditionInput =
    budget.spent >= spec.tokens
      ? {
          type: "BudgetWarning",
          status: "True",
          reason: "BudgetExhausted",
          message: `${budget.spent} of ${spec.tokens} tokens spent this ${spec.period}; requests are refused until ${budget.resetsAt}`,
        }
      : percent >= spec.warnPercent
        ? {
            type: "BudgetWarning",
            status: "True",
            reason: "BudgetNearlySpent",
            message: `${percent} % of the ${spec.period}'s ${spec.tokens} tokens spent (warning at ${spec.warnPercent} %)`,
          }
        : {
            type: "BudgetWarning",
            status: "False",
            reason: "WithinBudget",
            message: `${budget.spent} of ${spec.tokens} tokens spent this ${spec.period}`,
          };
  return { budget, condition };
}

export function upstreamsStatus(agent: Agent, reading: UpstreamReading[] | undefined): AgentStatus["upstreams"] {
  if (!agent.spec.upstreams) return undefined;
  if (!reading) return agent.status?.upstreams;
  return agentUpstreams(agent.spec).map((u) => {
    const r = reading.find((x) => x.upstream === u.name && x.model === u.model);
    return r
      ? { name: u.name, model: u.model, circuit: r.circuit, since: r.since }
      : { name: u.name, model: u.model, circuit: "closed" as const };
  });
}
