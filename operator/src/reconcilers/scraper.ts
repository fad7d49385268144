// Scraper: its Deployment (scraper + rendering service) and Service, a generated API key when
// auth is on without a key Secret, and status: endpoint, replicas, ready replicas, config hash.
import type { Scraper } from "@capstan/shared/api";
import { DEPLOYMENT, type KubeObject, SERVICE } from "@capstan/shared/kube";
import { type ConditionInput, compact, findCondition, setConditions } from "../controller/conditions.ts";
import type { Reconcile } from "../controller/controller.ts";
import {
  configHashOf,
  scraperEndpoint,
  scraperKeySecretName,
  scraperObjects,
  workloadReadiness,
} from "../translate/scraper.ts";
import { secretKeyCheck } from "./agent.ts";
import { applyAll } from "./apply.ts";
import { type OperatorContext, SCRAPER } from "./context.ts";
import { generatedKey, withSecretRetry } from "./key-secret.ts";
import { writeStatus } from "./status.ts";

/** Secret references of a Scraper, for the SecretsResolved condition and the Secret watch. */
export function scraperSecretRefs(s: Scraper): { name: string; key: string }[] {
  return [
    s.spec.llm.apiKeySecretRef,
    s.spec.browser.proxy?.usernameSecretRef,
    s.spec.browser.proxy?.passwordSecretRef,
    s.spec.auth.enabled ? s.spec.auth.apiKeySecretRef : undefined,
  ].filter((r): r is { name: string; key: string } => r !== undefined);
}

export function scraperReconciler(ctx: OperatorContext): Reconcile {
  return async ({ namespace, name }) => {
    const s = ctx.informers.scrapers.get(namespace, name) as (Scraper & KubeObject) | undefined;
    if (!s || s.metadata.deletionTimestamp) return undefined;
    const now = ctx.now();
    if (s.spec.auth.enabled && !s.spec.auth.apiKeySecretRef) {
      const r = await generatedKey({
        client: ctx.client,
        owner: s,
        type: SCRAPER,
        name: scraperKeySecretName(s),
        kind: "scraper",
        now,
      });
      if (r.issued)
        ctx.events.record(
          s,
          "Normal",
          "KeyIssued",
          "IssueKey",
          `scraper API key issued into Secret ${scraperKeySecretName(s)}`,
        );
    }
    const checks = await Promise.all(
      scraperSecretRefs(s).map(async (ref) => ({ ref, check: await secretKeyCheck(ctx, namespace, ref) })),
    );
    const missing = checks.filter((m) => !m.check.ok);
    const objects = scraperObjects(s, ctx.config);
    const writes = await applyAll(ctx, [
      { type: DEPLOYMENT, desired: objects[0] as KubeObject, cache: ctx.informers.deployments },
      { type: SERVICE, desired: objects[1] as KubeObject, cache: ctx.informers.services },
    ]);
    const live = ctx.informers.deployments.get(namespace, name);
    const deployment = live && configHashOf(live) === configHashOf(objects[0] as KubeObject) ? live : undefined;
    const readiness = workloadReadiness(
      deployment ?? (writes ? (objects[0] as KubeObject) : undefined),
      s.spec.replicas,
    );
    const secretsCondition: ConditionInput =
      missing.length === 0
        ? {
            type: "SecretsResolved",
            status: "True",
            reason: "SecretsFound",
            message: "every referenced Secret key exists",
          }
        : {
            type: "SecretsResolved",
            status: "False",
            reason: (missing[0]?.check as { reason?: string } | undefined)?.reason ?? "SecretNotFound",
            message: missing.map((m) => (m.check as { message: string }).message).join("; "),
          };
    const ready: ConditionInput =
      missing.length > 0
        ? { ...secretsCondition, type: "Ready" }
        : {
            type: "Ready",
            status: readiness.ready ? "True" : "False",
            reason: readiness.reason,
            message: readiness.message,
          };
    const conditions = setConditions(
      s.status?.conditions,
      [
        ready,
        secretsCondition,
        {
          type: "Available",
          status: readiness.reason === "Available" ? "True" : readiness.reason === "Applied" ? "Unknown" : "False",
          reason: readiness.reason,
          message: readiness.message,
        },
      ],
      s.metadata.generation,
      now,
    );
    const status = compact({
      observedGeneration: s.metadata.generation,
      conditions,
      endpoint: scraperEndpoint(s),
      replicas: s.spec.replicas,
      readyReplicas: readiness.readyReplicas,
      configHash: configHashOf(objects[0] as KubeObject),
    });
    const before = findCondition(s.status?.conditions, "Ready");
    await writeStatus(ctx.client, SCRAPER, s, status);
    if (writes)
      ctx.events.record(
        s,
        "Normal",
        "Applied",
        "Apply",
        `Deployment and Service ${name} applied (config ${status.configHash})`,
      );
    if (ready.status !== before?.status)
      ctx.events.record(s, ready.status === "True" ? "Normal" : "Warning", ready.reason, "Reconcile", ready.message);
    const requeueMs = withSecretRetry(undefined, missing.length > 0);
    return requeueMs !== undefined ? { requeueAfterMs: requeueMs } : undefined;
  };
}
