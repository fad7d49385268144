// Agent: validates every upstream's key reference and the knowledge references; Ready when usable.
import { type Agent, agentUpstreams } from "@capstan/shared/api";
import { type KubeObject, SECRET } from "@capstan/shared/kube";
import { findCondition } from "../controller/conditions.ts";
import type { Reconcile } from "../controller/controller.ts";
import { agentStatus, type SecretCheck } from "../translate/agent.ts";
import { upstreamsStatus } from "../translate/usage.ts";
import { AGENT, type OperatorContext } from "./context.ts";
import { withSecretRetry } from "./key-secret.ts";
import { missingKnowledgeIds } from "./search-key.ts";
import { writeStatus } from "./status.ts";

/**
 * Whether a Secret key exists, read live by name: the operator lists and watches only the Secrets
 * it owns in its own namespace (RBAC: get, never list, elsewhere). A user's Secret that changes is
 * seen at the next reconcile or resync.
 */
export async function secretKeyCheck(
  ctx: OperatorContext,
  namespace: string,
  ref: { name: string; key: string },
): Promise<SecretCheck> {
  const secret = await ctx.client.get<KubeObject & { data?: Record<string, string> }>(SECRET, namespace, ref.name);
  if (!secret) return { ok: false, reason: "SecretNotFound", message: `Secret ${ref.name} does not exist` };
  if (!secret.data || !(ref.key in secret.data)) {
    return { ok: false, reason: "KeyNotFound", message: `Secret ${ref.name} has no key ${ref.key}` };
  }
  return { ok: true };
}

/** Every upstream's key Secret checked; the first missing one is the answer (undefined: no keys). */
async function upstreamKeysCheck(
  ctx: OperatorContext,
  namespace: string,
  agent: Agent,
): Promise<SecretCheck | undefined> {
  let out: SecretCheck | undefined;
  for (const u of agentUpstreams(agent.spec)) {
    if (!u.apiKeySecretRef) continue;
    const check = await secretKeyCheck(ctx, namespace, u.apiKeySecretRef);
    if (!check.ok) return agent.spec.upstreams ? { ...check, message: `upstream ${u.name}: ${check.message}` } : check;
    out = check;
  }
  return out;
}

export function agentReconciler(ctx: OperatorContext): Reconcile {
  return async ({ namespace, name }) => {
    const agent = ctx.informers.agents.get(namespace, name) as (Agent & KubeObject) | undefined;
    if (!agent || agent.metadata.deletionTimestamp) return undefined;
    const providerKey = await upstreamKeysCheck(ctx, namespace, agent);
    const breakers = agent.spec.upstreams ? await ctx.gatewayUsage.upstreams(`${namespace}/${name}`) : undefined;
    const out = agentStatus({
      agent,
      upstreams: upstreamsStatus(agent, breakers),
      providerKey,
      missingKnowledgeIds: missingKnowledgeIds(ctx, namespace, agent.spec.knowledge?.knowledgeIds ?? []),
      now: ctx.now(),
    });
    const before = findCondition(agent.status?.conditions, "Ready");
    await writeStatus(ctx.client, AGENT, agent, out.status);
    const after = out.status.conditions?.[0];
    // A first Ready=True is not news (KeyIssued says it); transitions and failures are.
    if (after && after.status !== before?.status && (before || after.status !== "True")) {
      ctx.events.record(
        agent,
        after.status === "True" ? "Normal" : "Warning",
        after.reason,
        "Reconcile",
        after.message,
      );
    }
    // Breakers are followed every gateway.usageRefreshMs while the Agent has several upstreams.
    const requeueMs = withSecretRetry(
      agent.spec.upstreams ? ctx.config.gateway.usageRefreshMs : undefined,
      providerKey?.ok === false,
    );
    return requeueMs !== undefined ? { requeueAfterMs: requeueMs } : undefined;
  };
}
