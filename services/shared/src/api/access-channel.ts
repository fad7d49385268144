// AccessChannel: a chat access channel (reference 2.1). Becomes a generated key in a Secret,
// the key's hash in status, and a QPM limiter in Redis used by the shared gateway.
import { z } from "zod";
import { baseStatus, keyStatus, localObjectRef, secretKeyRef, timestamp } from "./common.ts";

export const accessChannelSpec = z.object({
  channelName: z.string().min(1).max(128).describe("free label for the channel (reference: channel name)"),
  agentRef: localObjectRef.describe("the Agent this channel's key runs"),
  qpm: z.int().min(1).max(1_000_000).default(100).describe("maximum requests per minute; default 100"),
  expiresAt: timestamp.optional().describe("the key is rejected (401) from this time on; absent: no expiry"),
  keepHistory: z.boolean().default(false).describe("store each exchange in Redis"),
  keySecretRef: secretKeyRef
    .optional()
    .describe("use this user-supplied key instead of generating one; the operator only hashes it"),
});

export const accessChannelStatus = z.object({
  ...baseStatus,
  ...keyStatus,
  agent: z.string().optional().describe("resolved Agent name"),
});

export type AccessChannelSpec = z.infer<typeof accessChannelSpec>;
export type AccessChannelStatus = z.infer<typeof accessChannelStatus>;
