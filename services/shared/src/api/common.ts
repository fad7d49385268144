// Building blocks shared by the five capstan.dev kinds. Each schema here is used three ways:
// runtime validation (zod), TypeScript types (z.infer) and the CRD's OpenAPI v3 schema.
import { z } from "zod";
import type { Meta } from "../kube/objects.ts";

export const GROUP = "capstan.dev";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;

/** A knowledge base id as clients send it: `kb_` then lower-case letters, digits and underscores. */
export const KNOWLEDGE_ID_PATTERN = /^kb_[a-z0-9][a-z0-9_]{0,62}$/;
export const knowledgeId = z
  .string()
  .regex(KNOWLEDGE_ID_PATTERN)
  .describe("Knowledge base id, form kb_<id> (lower-case letters, digits, underscores)");

/** A Go-style duration as Kubernetes uses it ("90s", "15m", "2160h"); CEL's duration() parses it. */
export const DURATION_PATTERN = /^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$/;
export const duration = z
  .string()
  .regex(DURATION_PATTERN)
  .describe('Duration in Go syntax, e.g. "30s", "15m", "2160h"');

export const timestamp = z.iso.datetime({ offset: true }).describe("RFC 3339 time, e.g. 2027-01-31T00:00:00Z");

export const httpUrl = z
  .string()
  .regex(/^https?:\/\/[^\s]+$/)
  .max(2048)
  .describe("http or https URL");

/**
 * A Kubernetes object name (RFC 1123 subdomain: lower-case letters, digits, '-' and '.'), as every
 * Secret, ConfigMap, Agent and Scraper name is. References are checked where they are written: the
 * CRD refuses `agentRef.name: "bad name!"` instead of a later status failure.
 */
export const OBJECT_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const objectName = (what: string) =>
  z.string().min(1).max(253).regex(OBJECT_NAME_PATTERN).describe(`${what} (a Kubernetes object name)`);

/** A Secret data key: letters, digits, '-', '_' and '.'. */
export const SECRET_KEY_PATTERN = /^[-._a-zA-Z0-9]+$/;

/** A reference to one key of a Secret in the resource's namespace. */
export const secretKeyRef = z
  .object({
    name: objectName("Secret name, in the resource's namespace"),
    key: z.string().min(1).max(253).regex(SECRET_KEY_PATTERN).describe("key inside the Secret's data"),
  })
  .describe("A key of a Secret in the same namespace");

export const localObjectRef = z.object({
  name: objectName("object name, in the resource's namespace"),
});

/** metav1.Condition, exactly as Kubernetes defines it. */
export const condition = z.object({
  type: z
    .string()
    .max(316)
    .regex(
      /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/,
    ),
  status: z.enum(["True", "False", "Unknown"]),
  observedGeneration: z.int().min(0).optional(),
  lastTransitionTime: timestamp,
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32768),
});
export type Condition = z.infer<typeof condition>;

/** Fields every status carries. */
export const baseStatus = {
  observedGeneration: z.int().min(0).optional().describe("metadata.generation the status reflects"),
  conditions: z.array(condition).optional().describe("Ready and kind-specific conditions (metav1.Condition)"),
};

/** Key status shared by AccessChannel and SearchKey: only hashes and a display prefix, never the key. */
export const keyStatus = {
  keyHash: z.string().optional().describe("sha256:<hex> of the current key; the data plane matches on it"),
  keyPrefix: z.string().optional().describe("the first characters of the key, for recognising it"),
  secretName: z.string().optional().describe("Secret holding the plaintext key"),
  expiresAt: timestamp.optional().describe("when the key stops being accepted"),
  endpoint: z.string().optional().describe("URL clients call with this key"),
};

/** Object metadata, as the Kubernetes layer defines it. */
export type ObjectMeta = Meta;

/** A resource of one of the five kinds, as stored in the API server. */
export interface Resource<K extends string, Spec, Status> {
  apiVersion: typeof API_VERSION;
  kind: K;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status;
}
