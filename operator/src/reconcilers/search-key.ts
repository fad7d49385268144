// SearchKey: the AccessChannel pattern plus a validity window, a scope checked against existing
// KnowledgeBases, and rotation: a new key every `rotation.every`, the previous hash kept in
// status.previousKeys until `rotation.overlap` has passed.
import type { SearchKey } from "@capstan/shared/api";
import { knowledgeIdOf } from "@capstan/shared/api";
import type { KubeObject } from "@capstan/shared/kube";
import { searchUrl } from "../config.ts";
import { findCondition } from "../controller/conditions.ts";
import type { Reconcile } from "../controller/controller.ts";
import { deriveSearchKeyStatus, rotationDue } from "../translate/keys.ts";
import { REQUEUE_SLACK_MS } from "./access-channel.ts";
import { type OperatorContext, SEARCH_KEY } from "./context.ts";
import { objectKey, verifierKeyOf, withSecretRetry } from "./key-secret.ts";
import { writeStatus } from "./status.ts";

/** Index of KnowledgeBases by namespace and knowledge id (the same id in two namespaces is two). */
export const KB_BY_ID = "knowledgeId";

/** The KB_BY_ID index value of a knowledge id in a namespace. */
export function kbIndexKey(namespace: string | undefined, knowledgeId: string): string {
  return `${namespace ?? ""}/${knowledgeId}`;
}

export function searchKeySecretName(sk: { metadata: { name: string } }): string {
  return `${sk.metadata.name}-search-key`;
}

/** Knowledge ids of the scope with no KnowledgeBase behind them in this namespace. */
export function missingKnowledgeIds(ctx: OperatorContext, namespace: string | undefined, ids: string[]): string[] {
  return ids.filter((id) => ctx.informers.knowledgeBases.byIndex(KB_BY_ID, kbIndexKey(namespace, id)).length === 0);
}

export { knowledgeIdOf };

export function searchKeyReconciler(ctx: OperatorContext): Reconcile {
  return async ({ namespace, name }) => {
    const sk = ctx.informers.searchKeys.get(namespace, name) as (SearchKey & KubeObject) | undefined;
    if (!sk || sk.metadata.deletionTimestamp) return undefined;
    const now = ctx.now();
    const { key, issued } = await objectKey({
      client: ctx.client,
      owner: sk,
      keySecretRef: sk.spec.keySecretRef,
      type: SEARCH_KEY,
      name: searchKeySecretName(sk),
      kind: "search",
      now,
      rotate: (current) => current.ok && rotationDue(sk, current.issuedAt, now),
    });
    const out = deriveSearchKeyStatus({
      searchKey: sk,
      key,
      missingKnowledgeIds: missingKnowledgeIds(ctx, namespace, sk.spec.knowledgeIds),
      verifierKey: verifierKeyOf(ctx),
      now,
      endpoint: `${searchUrl(ctx.config)}/v1/rag/search`,
    });
    const before = findCondition(sk.status?.conditions, "Ready");
    await writeStatus(ctx.client, SEARCH_KEY, sk, out.status);
    if (issued) {
      const rotated = Boolean(sk.status?.keyHash);
      ctx.events.record(
        sk,
        "Normal",
        rotated ? "KeyRotated" : "KeyIssued",
        rotated ? "RotateKey" : "IssueKey",
        rotated
          ? `search key rotated in Secret ${key.secretName}; the previous key stays valid for the overlap`
          : `search key issued into Secret ${key.secretName}`,
      );
    }
    const after = out.status.conditions?.[0];
    // A first Ready=True is not news (KeyIssued says it); transitions and failures are.
    if (after && after.status !== before?.status && (before || after.status !== "True")) {
      ctx.events.record(sk, after.status === "True" ? "Normal" : "Warning", after.reason, "Reconcile", after.message);
    }
    const requeueMs = withSecretRetry(
      out.requeueAfterMs !== undefined ? out.requeueAfterMs + REQUEUE_SLACK_MS : undefined,
      // No verifier in status (a Secret missing, or the verifier key not there yet): look again soon.
      !out.status.keyHash,
    );
    return requeueMs !== undefined ? { requeueAfterMs: requeueMs } : undefined;
  };
}
