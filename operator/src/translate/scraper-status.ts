// Pure status of a Scraper: whether the Secret keys it references exist (SecretsResolved), how its
// Deployment rolls out (Available), Ready when both allow it, and where the platform calls it.
import type { Scraper } from "@capstan/shared/api";
import { type ConditionInput, compact, setConditions } from "../controller/conditions.ts";
import { scraperEndpoint, type workloadReadiness } from "./scraper.ts";

/** A referenced Secret key that is missing: why (SecretNotFound, KeyNotFound) and in words. */
export interface MissingKey {
  reason: string;
  message: string;
}

export function deriveScraperStatus(f: {
  scraper: Scraper;
  /** The referenced Secret keys that are missing, in the order of scraperSecretRefs. */
  missing: MissingKey[];
  /** The rollout of the Deployment the operator wants (workloadReadiness). */
  readiness: ReturnType<typeof workloadReadiness>;
  /** The config hash of the Deployment the operator wants. */
  configHash: string | undefined;
  now: Date;
}) {
  const { scraper: s, missing, readiness } = f;
  const secrets = secretsResolved(missing);
  // A missing key is why the Scraper is not Ready; else Ready follows the rollout.
  const ready: ConditionInput =
    missing.length > 0
      ? { ...secrets, type: "Ready" }
      : {
          type: "Ready",
          status: readiness.ready ? "True" : "False",
          reason: readiness.reason,
          message: readiness.message,
        };
  const available: ConditionInput = {
    type: "Available",
    status: readiness.reason === "Available" ? "True" : readiness.reason === "Applied" ? "Unknown" : "False",
    reason: readiness.reason,
    message: readiness.message,
  };
  const conditions = setConditions(s.status?.conditions, [ready, secrets, available], s.metadata.generation, f.now);
  const status = compact({
    observedGeneration: s.metadata.generation,
    conditions,
    endpoint: scraperEndpoint(s),
    replicas: s.spec.replicas,
    readyReplicas: readiness.readyReplicas,
    configHash: f.configHash,
  });
  return { status, ready };
}

/** SecretsResolved: True when every referenced key exists, else the first missing one's reason. */
function secretsResolved(missing: MissingKey[]): ConditionInput {
  if (missing.length === 0) {
    return {
      type: "SecretsResolved",
      status: "True",
      reason: "SecretsFound",
      message: "every referenced Secret key exists",
    };
  }
  return {
    type: "SecretsResolved",
    status: "False",
    reason: missing[0]?.reason ?? "SecretNotFound",
    message: missing.map((m) => m.message).join("; "),
  };
}
