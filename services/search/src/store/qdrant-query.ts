// Pieces of a Qdrant search: which vector set a query reads, the request of one tenant's search,
// and its answer mapped to hits. Scores: Qdrant's raw cosine goes through cosineToScore like the
// embedded store's, and minScore is inclusive: score_threshold is only a loose pre-filter
// (Qdrant's is strict), the exact `score >= minScore` test runs in toHits.
import type { RegistryEntry } from "./qdrant-registry.ts";
import {
  type ChunkRecord,
  type CollectionInfo,
  cosineFloorOf,
  cosineToScore,
  type VectorHit,
  type VectorQuery,
} from "./types.ts";

export interface ScoredPoint {
  score: number;
  payload?: Record<string, unknown> | null;
}

/** The vector set a query reads: the one of its model (serving, or retired in its grace period). */
export function readable(e: RegistryEntry | undefined, model: string | undefined): CollectionInfo | undefined {
  if (!e || model === undefined) return e;
  return [e, e.retired].find((g) => g?.model === model);
}

/** One search of one tenant: its filter hits the per-tenant HNSW graph (payload_m). */
export function tenantSearch(q: VectorQuery, key: string, searchEf: number) {
  return {
    query: Array.from(q.vector),
    filter: { must: [{ key: "knowledgeId", match: { value: key } }] },
    limit: q.limit,
    // Strict and float32 on the server: pass a floor below the inclusive minimum (see toHits).
    score_threshold: cosineFloorOf(q.minScore),
    with_payload: true,
    params: { hnsw_ef: Math.max(searchEf, q.limit) },
  };
}

export function toHits(points: ScoredPoint[], minScore: number): VectorHit[] {
  return points
    .filter((p) => p.payload)
    .map((p) => ({ record: p.payload as unknown as ChunkRecord, score: cosineToScore(p.score) }))
    .filter((h) => h.score >= minScore);
}

/** A batch's searches by physical collection: one per (query, knowledge base) that has a readable vector set. */
export function groupByCollection(
  qs: VectorQuery[],
  entries: Map<string, RegistryEntry | undefined>,
  collectionName: (info: CollectionInfo) => string,
): Map<string, { owner: number; q: VectorQuery; key: string }[]> {
  const byCollection = new Map<string, { owner: number; q: VectorQuery; key: string }[]>();
  for (const [owner, q] of qs.entries()) {
    if (q.limit <= 0) continue;
    for (const key of new Set(q.keys)) {
      const info = readable(entries.get(key), q.model);
      if (!info) continue;
      const name = collectionName(info);
      byCollection.set(name, [...(byCollection.get(name) ?? []), { owner, q, key }]);
    }
  }
  return byCollection;
}
