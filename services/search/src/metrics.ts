// The search service's own metrics (request metrics come from buildBaseApp), grouped by what
// they count: searches, query embedding, ingestion, the Qdrant cluster, outbound calls. Each is
// defined through metricFamilies (@capstan/shared), its full name written out here.
import { LATENCY_BUCKETS, type MetricFamilies, metricFamilies, outboundMetrics, type Registry } from "@capstan/shared";

export function searchMetrics(registry: Registry) {
  const m = metricFamilies(registry);
  const metrics = {
    ...queryMetrics(m),
    ...embeddingMetrics(m),
    ...ingestMetrics(m),
    ...qdrantMetrics(m),
    outbound: outboundMetrics(registry, "capstan_search"),
  };
  // Both cache results exist at 0 from the start, so the hit-ratio panel has a series.
  for (const result of ["hit", "miss"]) metrics.cache.inc({ result }, 0);
  return metrics;
}

export type SearchMetrics = ReturnType<typeof searchMetrics>;

/** How searches went: latency by stage, outcomes, results per query, refusals, rerank fallbacks. */
function queryMetrics(m: MetricFamilies) {
  return {
    stage: m.histogram(
      "capstan_search_stage_duration_seconds",
      "Search latency by stage: embed (query embedding), vector (vector query), rerank",
      ["stage"],
      LATENCY_BUCKETS,
    ),
    queries: m.counter(
      "capstan_search_queries_total",
      "Search queries by endpoint (search, batch) and outcome (ok or error code)",
      ["endpoint", "outcome"],
    ),
    results: m.histogram(
      "capstan_search_results_returned",
      "Results returned per query",
      [],
      [0, 1, 2, 5, 10, 20, 50, 100],
    ),
    rateLimited: m.counter(
      "capstan_search_rate_limited_total",
      "Searches refused with 429 by a key's requests-per-minute limit (no key label: unbounded)",
    ),
    errors: m.counter("capstan_search_errors_total", "Error responses by error code", ["code"]),
    rerankFallbacks: m.counter(
      "capstan_search_rerank_fallbacks_total",
      "Queries whose external rerank failed and fell back to the hybrid reranker",
    ),
  };
}

/** The query embedding: model runs (texts per run, duration) and the query embedding cache. */
function embeddingMetrics(m: MetricFamilies) {
  return {
    embedBatch: m.histogram(
      "capstan_search_embedding_batch_size",
      "Texts per embedding model run",
      [],
      [1, 2, 4, 8, 16, 32, 64, 128],
    ),
    embedRun: m.histogram(
      "capstan_search_embedding_run_duration_seconds",
      "Duration of one embedding model run",
      [],
      LATENCY_BUCKETS,
    ),
    cache: m.counter("capstan_search_query_cache_total", "Query embedding cache lookups by result (hit, miss)", [
      "result",
    ]),
  };
}

/** The documents API's ingestion: chunks and documents written, time per document, documents in flight. */
function ingestMetrics(m: MetricFamilies) {
  return {
    ingestedChunks: m.counter(
      "capstan_search_ingested_chunks_total",
      "Chunks embedded and stored by the documents API",
    ),
    ingestedDocuments: m.counter(
      "capstan_search_ingested_documents_total",
      "Documents written through the documents API: embedded, or unchanged (same content hash: nothing embedded)",
      ["outcome"],
    ),
    ingestDuration: m.histogram(
      "capstan_search_ingest_duration_seconds",
      "Time to chunk, embed and store one document",
      [],
      [...LATENCY_BUCKETS, 120, 300],
    ),
    ingestsInFlight: m.gauge("capstan_search_ingests_in_flight", "Documents being ingested right now"),
  };
}

/** The Qdrant cluster behind search: its shards' replicas by state, and shards that cannot be read. */
function qdrantMetrics(m: MetricFamilies) {
  return {
    qdrantReplicas: m.gauge(
      "capstan_search_qdrant_shard_replicas",
      "Replicas of the shards of search's Qdrant collections by state (Active, Dead, Partial, ...), as one peer of a Qdrant cluster reports them",
      ["state"],
    ),
    qdrantUnavailableShards: m.gauge(
      "capstan_search_qdrant_unavailable_shards",
      "Shards of search's Qdrant collections with no Active replica (their points cannot be read)",
    ),
  };
}
