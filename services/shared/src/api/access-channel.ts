// AccessChannel: a chat access channel (reference 2.1). Becomes a generated key in a Secret,
// the key's hash in status, and a QPM limiter in Redis used by the shared gateway.
import { z } from "zod";
import { baseStatus, keyStatus, localObjectRef, secretKeyRef, timestamp } from "./common.ts";

export const BUDGET_PERIODS = ["day", "week", "month"] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

export const tokenBudget = z
  .object({
    tokens: z.int().min(1).max(1e15).describe("tokens (prompt + completion) the channel may use per period"),
    period: z
      .enum(BUDGET_PERIODS)
      .default("month")
      .describe("calendar period in UTC: day, week (from Monday) or month; the budget starts again with the next"),
    warnPercent: z
      .int()
      .min(1)
      .max(100)
      .default(80)
      .describe("status condition BudgetWarning turns True once this share of the budget is spent"),
  })
  .describe("A token budget per period; once spent, requests are refused (429 budget_exhausted) until the next");

export const accessChannelSpec = z.object({
  channelName: z.string().min(1).max(128).describe("free label for the channel (reference: channel name)"),
  agentRef: localObjectRef.describe("the Agent this channel's key runs"),
  qpm: z.int().min(1).max(1_000_000).default(100).describe("maximum requests per minute; default 100"),
  expiresAt: timestamp.optional().describe("the key is rejected (401) from this time on; absent: no expiry"),
  tpm: z
    .int()
    .min(1)
    .max(1_000_000_000)
    .optional()
    .describe(
      "maximum tokens (prompt + completion) per minute, shared by every gateway replica; a request's prompt " +
        "tokens are counted before it runs, its completion when it ends; absent: no token limit",
    ),
  budget: tokenBudget.optional(),
  keepHistory: z.boolean().default(false).describe("store each exchange in Redis"),
  keySecretRef: secretKeyRef
    .optional()
    .describe("use this user-supplied key instead of generating one; the operator only hashes it"),
});

export const accessChannelStatus = z.object({
  ...baseStatus,
  ...keyStatus,
  agent: z.string().optional().describe("resolved Agent name"),
  budget: z
    .object({
      period: z.string().describe("the current period's start, e.g. 2027-01-01"),
      spent: z.int().min(0).describe("tokens spent in the current period, as the gateway counted them"),
      tokens: z.int().min(1).describe("the period's budget"),
      resetsAt: timestamp.describe("when the next period starts"),
    })
    .optional()
    .describe("spend of spec.budget in the current period"),
});

export type AccessChannelSpec = z.infer<typeof accessChannelSpec>;
export type AccessChannelStatus = z.infer<typeof accessChannelStatus>;
