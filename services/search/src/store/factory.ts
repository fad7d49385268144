// The vector store a process uses: Qdrant when a URL is configured, else the embedded store
// (persisted under dataDir, or in memory). The Qdrant API key and CA bundle may come from files
// (a mounted Secret / ConfigMap), read once at start; the key is never logged.
import { readFileSync } from "node:fs";
import type { Logger } from "@capstan/shared";
import type { SearchConfig } from "../config.ts";
import type { SearchMetrics } from "../metrics.ts";
import { EmbeddedStore } from "./embedded.ts";
import { QdrantStore } from "./qdrant.ts";
import { StoreError, type VectorStore } from "./types.ts";

function readSetting(what: string, file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new StoreError(`cannot read the Qdrant ${what} file ${file}: ${(err as NodeJS.ErrnoException).code}`);
  }
}

export async function createStore(config: SearchConfig, logger: Logger, metrics?: SearchMetrics): Promise<VectorStore> {
  const q = config.qdrant;
  if (q.url) {
    const apiKey = q.apiKeyFile ? readSetting("API key", q.apiKeyFile).trim() : q.apiKey;
    const ca = q.caFile ? readSetting("CA bundle", q.caFile) : undefined;
    logger.info(
      { url: q.url, prefix: q.collectionPrefix, apiKey: apiKey ? "set" : "none", ca: q.caFile ?? "system" },
      "vector store: qdrant",
    );
    return new QdrantStore({
      url: q.url,
      apiKey,
      ca,
      collectionPrefix: q.collectionPrefix,
      timeoutMs: q.timeoutMs,
      hnsw: q.hnsw,
      searchEf: q.searchEf,
      collection: q.collection,
      clusterStatusMs: q.statusIntervalMs,
      ...(metrics ? { metrics: metrics.outbound } : {}),
    });
  }
  logger.info({ dataDir: config.dataDir ?? "(memory)" }, "vector store: embedded");
  return new EmbeddedStore({
    dataDir: config.dataDir,
    onError: (err) => logger.error({ err: err.message }, "embedded store"),
  });
}
