// AccessChannel: a chat key in an owner-referenced Secret (or the hash of a user-supplied one),
// its hash, display prefix, expiry and endpoint in status, Ready only with an existing Agent and
// an unexpired key, and a requeue at the expiry so the Expired condition flips on time.
import type { AccessChannel } from "@capstan/shared/api";
import type { KubeObject } from "@capstan/shared/kube";
import { gatewayUrl } from "../config.ts";
import { findCondition } from "../controller/conditions.ts";
import type { Reconcile } from "../controller/controller.ts";
import { deriveAccessChannelStatus } from "../translate/keys.ts";
import { budgetStatus } from "../translate/usage.ts";
import { ACCESS_CHANNEL, type OperatorContext } from "./context.ts";
import { objectKey, verifierKeyOf, withSecretRetry } from "./key-secret.ts";
import { writeStatus } from "./status.ts";

/** Slack added to time-based requeues so the clock has certainly passed the instant. */
export const REQUEUE_SLACK_MS = 250;

export function channelKeySecretName(ch: { metadata: { name: string } }): string {
  return `${ch.metadata.name}-chat-key`;
}

export function accessChannelReconciler(ctx: OperatorContext): Reconcile {
  return async ({ namespace, name }) => {
    const ch = ctx.informers.channels.get(namespace, name) as (AccessChannel & KubeObject) | undefined;
    if (!ch || ch.metadata.deletionTimestamp) return undefined; // the key Secret goes with it (owner reference)
    const now = ctx.now();
    const { key, issued } = await objectKey({
      client: ctx.client,
      owner: ch,
      keySecretRef: ch.spec.keySecretRef,
      type: ACCESS_CHANNEL,
      name: channelKeySecretName(ch),
      kind: "chat",
      now,
    });
    const agent = ctx.informers.agents.get(namespace, ch.spec.agentRef.name);
    const spend = ch.spec.budget ? await ctx.gatewayUsage.budget(`${namespace}/${name}`) : undefined;
    const out = deriveAccessChannelStatus({
      budget: budgetStatus(ch, spend),
      channel: ch,
      agent,
      key,
      verifierKey: verifierKeyOf(ctx),
      now,
      endpoint: `${gatewayUrl(ctx.config)}/api/v1`,
    });
    const before = findCondition(ch.status?.conditions, "Ready");
    await writeStatus(ctx.client, ACCESS_CHANNEL, ch, out.status);
    if (issued)
      ctx.events.record(ch, "Normal", "KeyIssued", "IssueKey", `chat key issued into Secret ${key.secretName}`);
    const after = out.status.conditions?.[0];
    // A first Ready=True is not news (KeyIssued says it); transitions and failures are.
    if (after && after.status !== before?.status && (before || after.status !== "True")) {
      ctx.events.record(ch, after.status === "True" ? "Normal" : "Warning", after.reason, "Reconcile", after.message);
    }
    // A budget's spend is followed every gateway.usageRefreshMs (or sooner, at the key's expiry).
    const refreshMs = ctx.config.gateway.usageRefreshMs;
    const expiryMs = out.requeueAfterMs !== undefined ? out.requeueAfterMs + REQUEUE_SLACK_MS : undefined;
    const requeueMs = withSecretRetry(
      ch.spec.budget ? Math.min(expiryMs ?? refreshMs, refreshMs) : expiryMs,
      // No verifier in status (a Secret missing, or the verifier key not there yet): look again soon.
      !out.status.keyHash,
    );
    return requeueMs !== undefined ? { requeueAfterMs: requeueMs } : undefined;
  };
}
