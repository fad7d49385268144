// The vector store a process uses: Qdrant when a URL is configured, else the embedded store
// (persisted under dataDir, or in memory).
import type { Logger } from "@capstan/shared";
import type { SearchConfig } from "../config.ts";
import type { SearchMetrics } from "../metrics.ts";
import { EmbeddedStore } from "./embedded.ts";
import { QdrantStore } from "./qdrant.ts";
import type { VectorStore } from "./types.ts";

export async function createStore(config: SearchConfig, logger: Logger, metrics?: SearchMetrics): Promise<VectorStore> {
  if (config.qdrant.url) {
    logger.info({ url: config.qdrant.url, prefix: config.qdrant.collectionPrefix }, "vector store: qdrant");
    return new QdrantStore({
      url: config.qdrant.url,
      apiKey: config.qdrant.apiKey,
      collectionPrefix: config.qdrant.collectionPrefix,
      timeoutMs: config.qdrant.timeoutMs,
      hnsw: config.qdrant.hnsw,
      searchEf: config.qdrant.searchEf,
      ...(metrics ? { metrics: metrics.outbound } : {}),
    });
  }
  logger.info({ dataDir: config.dataDir ?? "(memory)" }, "vector store: embedded");
  return new EmbeddedStore({
    dataDir: config.dataDir,
    onError: (err) => logger.error({ err: err.message }, "embedded store"),
  });
}
