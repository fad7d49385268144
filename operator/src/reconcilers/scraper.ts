// Scraper: its Deployment (scraper + rendering service) and Service, a generated API key when
// auth is on without a key Secret, and status: endpoint, replicas, ready replicas, config hash.
import type { Scraper } from "@capstan/shared/api";
import { DEPLOYMENT, type KubeObject, SERVICE } from "@capstan/shared/kube";
import { findCondition } from "../controller/conditions.ts";
import type { Reconcile } from "../controller/controller.ts";
import { configHashOf, scraperKeySecretName, scraperObjects, workloadReadiness } from "../translate/scraper.ts";
import { deriveScraperStatus, type MissingKey } from "../translate/scraper-status.ts";
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
    await issueKey(ctx, s, now);
    const missing = await missingKeys(ctx, namespace, s);
    const objects = scraperObjects(s, ctx.config);
    const wanted = objects[0] as KubeObject;
    const writes = await applyAll(ctx, [
      { type: DEPLOYMENT, desired: wanted, cache: ctx.informers.deployments },
      { type: SERVICE, desired: objects[1] as KubeObject, cache: ctx.informers.services },
    ]);
    // The live Deployment counts once it runs the wanted config; just written, the wanted one does.
    const live = ctx.informers.deployments.get(namespace, name);
    const deployment = live && configHashOf(live) === configHashOf(wanted) ? live : undefined;
    const readiness = workloadReadiness(deployment ?? (writes ? wanted : undefined), s.spec.replicas);
    const { status, ready } = deriveScraperStatus({
      scraper: s,
      missing,
      readiness,
      configHash: configHashOf(wanted),
      now,
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

/** Auth on without a key Secret of the user's: the operator issues one (once) into its own Secret. */
async function issueKey(ctx: OperatorContext, s: Scraper & KubeObject, now: Date): Promise<void> {
  if (!s.spec.auth.enabled || s.spec.auth.apiKeySecretRef) return;
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

/** The Secret keys the Scraper references that do not exist (read live), in reference order. */
async function missingKeys(ctx: OperatorContext, namespace: string, s: Scraper): Promise<MissingKey[]> {
  const checks = await Promise.all(scraperSecretRefs(s).map((ref) => secretKeyCheck(ctx, namespace, ref)));
  return checks.filter((check): check is MissingKey & { ok: false } => !check.ok);
}
