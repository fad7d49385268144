// When a KnowledgeBase must be ingested before its refresh is due: its last run could not reach
// the search service or its vector store (retried with the controller's per-key backoff, so it
// recovers by itself once the store is back), or its vectors vanished behind the operator's back
// (a Qdrant collection deleted by hand), which the next reconcile re-creates and re-fills, or
// the generation of a new embedding model is not complete (the old one keeps serving meanwhile).

import type { KnowledgeBase } from "@capstan/shared/api";
import { knowledgeIdOf } from "@capstan/shared/api";
import { SearchApiError } from "@capstan/shared/clients/search-client";
import type { KubeObject } from "@capstan/shared/kube";
import { findCondition } from "../controller/conditions.ts";
import type { KnowledgeBaseRef } from "../ingest/search-documents.ts";
import { sourceChunks } from "../translate/knowledge-base.ts";
import type { OperatorContext } from "./context.ts";

export const SEARCH_UNAVAILABLE = "SearchUnavailable";

/** A failure worth retrying soon: the search service (or the store behind it) did not answer. */
export function searchUnavailable(err: unknown): boolean {
  return err instanceof SearchApiError && err.retryable;
}

/**
 * Whether a KnowledgeBase is worth reconciling as soon as the search service becomes ready: it is
 * not Ready (never ingested, or its last run could not reach search). Waiting for its per-key
 * backoff instead could cost seconds to minutes after search started (the first install: search
 * loads its model while the operator already reconciles).
 */
export function waitsForSearch(kb: KnowledgeBase): boolean {
  return findCondition(kb.status?.conditions, "Ready")?.status !== "True";
}

/** A Deployment that is the platform's search service with at least one ready replica. */
export function searchReady(d: KubeObject, platformNamespace: string, name: string): boolean {
  const ready = (d as { status?: { readyReplicas?: number } }).status?.readyReplicas ?? 0;
  return d.metadata.namespace === platformNamespace && d.metadata.name === name && ready > 0;
}

/** How the documents API addresses a KnowledgeBase: its namespace and id. */
export function kbRef(kb: KnowledgeBase): KnowledgeBaseRef {
  return { namespace: kb.metadata.namespace ?? "default", knowledgeId: knowledgeIdOf(kb) };
}

export async function needsRefill(ctx: OperatorContext, kb: KnowledgeBase): Promise<boolean> {
  const conditions = kb.status?.conditions;
  // A generation for a new model is not complete yet (a source failed): build it again.
  if (kb.status?.building) return true;
  if (findCondition(conditions, "CollectionReady")?.status === "False") return true;
  if (findCondition(conditions, "Ingested")?.reason === SEARCH_UNAVAILABLE) return true;
  if (!kb.status?.chunks) return false;
  try {
    const info = await ctx.search.getKnowledgeBase(kbRef(kb));
    // Fewer chunks from sources than the last complete ingestion stored: vectors were lost (all,
    // or part of them when a write re-created a deleted collection); ingest again. Uploaded
    // documents come and go through the public API and are counted apart.
    return !info || sourceChunks(info) < sourceChunks(kb.status);
  } catch {
    return false; // search itself is down: the refresh, when due, reports it
  }
}
