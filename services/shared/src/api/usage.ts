// The gateway's internal API (its internal port, services/gateway/src/routes/internal.ts) on the
// wire, defined once: the gateway's routes serialise their answers with these schemas, and their
// clients parse them with the same ones: the console's (console/src/usage-hourly.ts) the hourly
// usage, the operator's (operator/src/ingest/gateway-usage.ts) budgets and upstream breakers.
// A usage row is the tokens and requests of one channel, agent, upstream and model in one UTC
// hour, with a cost where the Agent prices the model.
import { z } from "zod";

export const usageRowSchema = z.object({
  /** namespace/name on the gateway's API; the console shows the name only. */
  channel: z.string(),
  /** The UTC hour, e.g. 2027-03-31T13. */
  hour: z.string(),
  agent: z.string(),
  upstream: z.string(),
  model: z.string(),
  prompt: z.number(),
  completion: z.number(),
  requests: z.number(),
  /** From the Agent's spec.prices, per million tokens; absent when the model has no price. */
  cost: z.object({ amount: z.number(), currency: z.string() }).optional(),
});
export type UsageRow = z.infer<typeof usageRowSchema>;

/** GET /internal/v1/usage's answer: the hours read and their rows. */
export const usageAnswerSchema = z.object({ hours: z.int(), usage: z.array(usageRowSchema) });
export type UsageAnswer = z.infer<typeof usageAnswerSchema>;

/** A channel's budget spend in the current period (shared in Redis: any replica answers for all). */
export const budgetSpendSchema = z.object({
  /** namespace/name. */
  channel: z.string(),
  period: z.string(),
  spent: z.number(),
  tokens: z.number(),
  resetsAt: z.string(),
});
export type BudgetSpend = z.infer<typeof budgetSpendSchema>;

/** GET /internal/v1/budget's answer: null when the channel has no budget. */
export const budgetAnswerSchema = z.object({ budget: budgetSpendSchema.nullable() });

/** One upstream breaker of an Agent, as the replica that answers holds it. */
export const upstreamStateSchema = z.object({
  /** namespace/name of the Agent. */
  agent: z.string(),
  upstream: z.string(),
  model: z.string(),
  circuit: z.enum(["closed", "open", "half_open"]),
  /** When the breaker entered this state (RFC 3339). */
  since: z.string(),
});
export type UpstreamState = z.infer<typeof upstreamStateSchema>;

/** GET /internal/v1/upstreams's answer. */
export const upstreamsAnswerSchema = z.object({ upstreams: z.array(upstreamStateSchema) });
