// When a KnowledgeBase must be ingested before its refresh is due: its last run could not reach
// the search service or its vector store (retried with the controller's per-key backoff, so it
// recovers by itself once the store is back), or its vectors vanished behind the operator's back
// (a Qdrant collection deleted by hand), which the next reconcile re-creates and re-fills, or
// the vector set of a new embedding model is not complete (the old one keeps serving meanwhile).

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
 * loads its model while the operator already reconciles; a store outage doubles the backoff of
 * every KnowledgeBase that refreshed during it).
 */
export function waitsForSearch(kb: KnowledgeBase): boolean {
  return findCondition(kb.status?.conditions, "Ready")?.status !== "True";
}

/** A Deployment that is the platform's search service with at least one ready replica. */
export function searchReady(d: KubeObject, platformNamespace: string, name: string): boolean {
  const ready = (d as { status?: { readyReplicas?: number } }).status?.readyReplicas ?? 0;
  return d.metadata.namespace === platformNamespace && d.metadata.name === name && ready > 0;
}

/**
 * Which KnowledgeBases to wake when the search Deployment changes. Each time search comes up
 * anew (from no ready replica, or a rollout of a new template: another store, another model)
 * every KnowledgeBase, because its store may have changed under it (an embedded store starts
 * empty; a store switched by the chart holds other collections): each reconcile compares search's
 * counts with its status and refills what is missing (needsRefill). "Anew" is counted once the
 * rollout is complete (rolledOut): while a RollingUpdate still has old replicas serving, the
 * counts would be compared against the old store. Any other ready event wakes only the ones
 * waiting for search. Nothing while no replica is ready. An update is mapped with both its old
 * and its new object: an object already seen (its resourceVersion) changes nothing.
 */
export class SearchWakeups {
  private seen: string | undefined;
  private readonly versions: string[] = [];
  private readonly namespace: string;
  private readonly name: string;

  constructor(platformNamespace: string, name: string) {
    this.namespace = platformNamespace;
    this.name = name;
  }

  wake<T extends KubeObject>(d: KubeObject, kbs: T[]): T[] {
    if (d.metadata.namespace !== this.namespace || d.metadata.name !== this.name) return [];
    const version = d.metadata.resourceVersion ?? "";
    if (this.versions.includes(version)) return [];
    this.versions.push(version);
    if (this.versions.length > 8) this.versions.shift();
    if (!searchReady(d, this.namespace, this.name)) {
      this.seen = undefined;
      return [];
    }
    const waiting = () => kbs.filter((kb) => waitsForSearch(kb as unknown as KnowledgeBase));
    if (!rolledOut(d)) return waiting();
    const generation = String(d.metadata.generation ?? "");
    const anew = this.seen !== generation;
    this.seen = generation;
    return anew ? kbs : waiting();
  }
}

interface DeploymentState {
  spec?: { replicas?: number };
  status?: { observedGeneration?: number; replicas?: number; updatedReplicas?: number; readyReplicas?: number };
}

/**
 * Whether a Deployment's latest template is all that runs, every replica ready: what
 * `kubectl rollout status` waits for (the controller has seen the spec, every replica is of the
 * new template, no old one is left, all are ready).
 */
export function rolledOut(d: KubeObject): boolean {
  const { spec, status } = d as DeploymentState;
  const want = spec?.replicas ?? 1;
  return (
    (status?.observedGeneration ?? 0) >= (d.metadata.generation ?? 0) &&
    (status?.updatedReplicas ?? 0) >= want &&
    (status?.replicas ?? 0) === (status?.updatedReplicas ?? 0) &&
    (status?.readyReplicas ?? 0) >= want
  );
}

/** How the documents API addresses a KnowledgeBase: its namespace and id. */
export function kbRef(kb: KnowledgeBase): KnowledgeBaseRef {
  return { namespace: kb.metadata.namespace ?? "default", knowledgeId: knowledgeIdOf(kb) };
}

export async function needsRefill(ctx: OperatorContext, kb: KnowledgeBase): Promise<boolean> {
  const conditions = kb.status?.conditions;
  // A vector set for a new model is not complete yet (a source failed): build it again.
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
