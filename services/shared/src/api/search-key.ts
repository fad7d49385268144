// SearchKey: a knowledge-search key (reference 2.2): name, validity window, scope, IP allow-list.
import { z } from "zod";
import { baseStatus, duration, keyStatus, knowledgeId, secretKeyRef, timestamp } from "./common.ts";

export const searchKeyRotation = z
  .object({
    every: duration.default("2160h").describe("issue a new key this long after the current one (2160h = 90 days)"),
    overlap: duration.default("24h").describe("the previous key stays valid this long after rotation"),
  })
  .meta({
    "x-kubernetes-validations": [
      {
        rule: "duration(self.overlap) < duration(self.every)",
        message: "rotation.overlap must be shorter than rotation.every",
      },
    ],
  });

export const searchKeySpec = z
  .object({
    keyName: z.string().min(1).max(128).describe("label for the key (reference: key name)"),
    validFrom: timestamp.optional().describe("not accepted before this time; absent: from creation"),
    validUntil: timestamp.optional().describe("not accepted from this time on; absent: no end"),
    knowledgeIds: z
      .array(knowledgeId)
      .min(1)
      .max(256)
      .describe("permission scope: the knowledge bases this key may search (least privilege)"),
    permissions: z
      .array(z.enum(["read", "write"]))
      .min(1)
      .max(2)
      .default(["read"])
      .describe(
        "what the key may do on its knowledgeIds: read = search (and list uploaded documents); write = upload, replace and delete documents through the public documents API. Default read only",
      ),
    allowedCIDRs: z
      .array(z.string().max(64))
      .max(256)
      .optional()
      .meta({
        "x-kubernetes-validations": [
          {
            rule: "self.all(c, isCIDR(c) || isIP(c))",
            message: "allowedCIDRs entries must be IP addresses or CIDRs (e.g. 10.0.0.0/8, 2001:db8::/32)",
          },
        ],
      })
      .describe("client IPs or CIDRs allowed to use the key (IPv4 and IPv6); absent: any"),
    requestsPerMinute: z
      .int()
      .min(1)
      .max(1_000_000)
      .default(600)
      .describe(
        "maximum searches per minute with this key, shared by every search replica (each runs an embedding); over it: 429 with Retry-After",
      ),
    rotation: searchKeyRotation.optional().describe("automatic rotation; rotation about every 90 days is advised"),
    keySecretRef: secretKeyRef.optional().describe("use this user-supplied key; the operator only hashes it"),
  })
  .meta({
    "x-kubernetes-validations": [
      {
        rule: "!has(self.validFrom) || !has(self.validUntil) || timestamp(self.validUntil) > timestamp(self.validFrom)",
        message: "validUntil must be after validFrom",
      },
      {
        rule: "!(has(self.rotation) && has(self.keySecretRef))",
        message: "rotation needs operator-generated keys: remove keySecretRef or rotation",
      },
    ],
  });

export const previousKey = z.object({
  keyHash: z.string(),
  validUntil: timestamp.describe("end of the rotation overlap"),
});

export const searchKeyStatus = z.object({
  ...baseStatus,
  ...keyStatus,
  validFrom: timestamp.optional(),
  rotatedAt: timestamp.optional().describe("when the current key was issued"),
  previousKeys: z.array(previousKey).optional().describe("hashes still valid during a rotation overlap"),
});

export type SearchKeySpec = z.infer<typeof searchKeySpec>;
export type SearchKeyStatus = z.infer<typeof searchKeyStatus>;
