// The search service's own metrics (request metrics come from buildBaseApp), grouped by what
// they count: searches, query embedding, ingestion, the Qdrant cluster, outbound calls.
import { Counter, Gauge, Histogram, LATENCY_BUCKETS, outboundMetrics, type Registry } from "@capstan/shared";

export function searchMetrics(registry: Registry) {
  const metrics = {
    ...queryMetrics(registry),
    ...embeddingMetrics(registry),
    ...ingestMetrics(registry),
    ...qdrantMetrics(registry),
    outbound: outboundMetrics(registry, "capstan_search"),
  };
  // Both cache results exist at 0 from the start, so the hit-ratio panel has a series.
  for (const result of ["hit", "miss"]) metrics.cache.inc({ result }, 0);
  return metrics;
}

export type SearchMetrics = ReturnType<typeof searchMetrics>;

/** How searches went: latency by stage, outcomes, results per query, refusals, rerank fallbacks. */
function queryMetrics(registry: Registry) {
  return {
    stage: new Histogram({
      name: "capstan_search_stage_duration_seconds",
      help: "Search latency by stage: embed (query embedding), vector (vector query), rerank",
      labelNames: ["stage"] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    queries: new Counter({
      name: "capstan_search_queries_total",
      help: "Search queries by endpoint (search, batch) and outcome (ok or error code)",
      labelNames: ["endpoint", "outcome"] as const,
      registers: [registry],
    }),
    results: new Histogram({
      name: "capstan_search_results_returned",
      help: "Results returned per query",
      buckets: [0, 1, 2, 5, 10, 20, 50, 100],
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: "capstan_search_rate_limited_total",
      help: "Searches refused with 429 by a key's requests-per-minute limit (no key label: unbounded)",
      registers: [registry],
    }),
    errors: new Counter({
      name: "capstan_search_errors_total",
      help: "Error responses by error code",
      labelNames: ["code"] as const,
      registers: [registry],
    }),
    rerankFallbacks: new Counter({
      name: "capstan_search_rerank_fallbacks_total",
      help: "Queries whose external rerank failed and fell back to the hybrid reranker",
      registers: [registry],
    }),
  };
}

/** The query embedding: model runs (texts per run, duration) and the query embedding cache. */
function embeddingMetrics(registry: Registry) {
  return {
    embedBatch: new Histogram({
      name: "capstan_search_embedding_batch_size",
      help: "Texts per embedding model run",
      buckets: [1, 2, 4, 8, 16, 32, 64, 128],
      registers: [registry],
    }),
    embedRun: new Histogram({
      name: "capstan_search_embedding_run_duration_seconds",
      help: "Duration of one embedding model run",
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    cache: new Counter({
      name: "capstan_search_query_cache_total",
      help: "Query embedding cache lookups by result (hit, miss)",
      labelNames: ["result"] as const,
      registers: [registry],
    }),
  };
}

/** The documents API's ingestion: chunks and documents written, time per document, documents in flight. */
function ingestMetrics(registry: Registry) {
  return {
    ingestedChunks: new Counter({
      name: "capstan_search_ingested_chunks_total",
      help: "Chunks embedded and stored by the documents API",
      registers: [registry],
    }),
    ingestedDocuments: new Counter({
      name: "capstan_search_ingested_documents_total",
      help: "Documents written through the documents API: embedded, or unchanged (same content hash: nothing embedded)",
      labelNames: ["outcome"] as const,
      registers: [registry],
    }),
    ingestDuration: new Histogram({
      name: "capstan_search_ingest_duration_seconds",
      help: "Time to chunk, embed and store one document",
      buckets: [...LATENCY_BUCKETS, 120, 300],
      registers: [registry],
    }),
    ingestsInFlight: new Gauge({
      name: "capstan_search_ingests_in_flight",
      help: "Documents being ingested right now",
      registers: [registry],
    }),
  };
}

/** The Qdrant cluster behind search: its shards' replicas by state, and shards that cannot be read. */
function qdrantMetrics(registry: Registry) {
  return {
    qdrantReplicas: new Gauge({
      name: "capstan_search_qdrant_shard_replicas",
      help: "Replicas of the shards of search's Qdrant collections by state (Active, Dead, Partial, ...), as one peer of a Qdrant cluster reports them",
      labelNames: ["state"] as const,
      registers: [registry],
    }),
    qdrantUnavailableShards: new Gauge({
      name: "capstan_search_qdrant_unavailable_shards",
      help: "Shards of search's Qdrant collections with no Active replica (their points cannot be read)",
      registers: [registry],
    }),
  };
}
