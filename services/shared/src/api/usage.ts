// The gateway's usage API (GET /internal/v1/usage on its internal port) on the wire, defined once:
// the gateway's route serialises its answer with these schemas and the console's client
// (console/src/usage-hourly.ts) parses it with them. Each row is the tokens and requests of one
// channel, agent, upstream and model in one UTC hour, with a cost where the Agent prices the model.
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
