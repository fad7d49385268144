// Agent: validates the provider key reference and the knowledge references; Ready when usable.
import type { Agent } from "@capstan/shared/api";
import type { KubeObject } from "@capstan/shared/kube";
import { findCondition } from "../controller/conditions.ts";
import type { Reconcile } from "../controller/controller.ts";
import { agentStatus, type SecretCheck } from "../translate/agent.ts";
import { AGENT, type OperatorContext } from "./context.ts";
import { missingKnowledgeIds } from "./search-key.ts";
import { writeStatus } from "./status.ts";

/** Whether a Secret key exists, from the cache (which keeps key names, not values, of Secrets we do not own). */
export function secretKeyCheck(
  ctx: OperatorContext,
  namespace: string,
  ref: { name: string; key: string },
): SecretCheck {
  const secret = ctx.informers.secrets.get(namespace, ref.name) as
    | (KubeObject & { data?: Record<string, string> })
    | undefined;
  if (!secret) return { ok: false, reason: "SecretNotFound", message: `Secret ${ref.name} does not exist` };
  if (!secret.data || !(ref.key in secret.data)) {
    return { ok: false, reason: "KeyNotFound", message: `Secret ${ref.name} has no key ${ref.key}` };
  }
  return { ok: true };
}

export function agentReconciler(ctx: OperatorContext): Reconcile {
  return async ({ namespace, name }) => {
    const agent = ctx.informers.agents.get(namespace, name) as (Agent & KubeObject) | undefined;
    if (!agent || agent.metadata.deletionTimestamp) return undefined;
    const ref = agent.spec.provider?.apiKeySecretRef;
    const out = agentStatus({
      agent,
      providerKey: ref ? secretKeyCheck(ctx, namespace, ref) : undefined,
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
    return undefined;
  };
}
