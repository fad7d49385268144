// Ingestion end to end: documents through the service's own Ingester (chunking with the default
// 800/100 characters, embedding on the local model's documents worker in slices of 256, one
// store write per document) into the embedded vector store (usearch HNSW), timed from the first
// document to the last stored chunk. Logs progress after every document. Bounded; stops by itself.
//
//   node bench/search/ingest-bench.ts [--chunks 100000] [--per-doc 1000]
//   knobs: CAPSTAN_EMBEDDING_THREADS (default: every core)
//   --smoke: 40 chunks in documents of 20 (bench/work.ts). The run stops unless the store holds
//   every chunk the ingester reported and a search by a chunk's own vector finds it.
import { readFileSync } from "node:fs";
import { createLogger, createRegistry } from "@capstan/shared";
import { ResourceView } from "@capstan/shared/resource-view";
import { CachedEmbedder } from "../../services/search/src/embedding/provider.ts";
import { chunkText, loadLocalEmbedder, loadSearchConfig } from "../../services/search/src/index.ts";
import { Ingester } from "../../services/search/src/ingest.ts";
import { KnowledgeBases } from "../../services/search/src/knowledge-bases.ts";
import { searchMetrics } from "../../services/search/src/metrics.ts";
import { EmbeddedStore } from "../../services/search/src/store/embedded.ts";
import { expectCount, expectWork, sized, workChecked } from "../work.ts";
import { chunks } from "./corpus.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return (i >= 0 ? process.argv[i + 1] : undefined) ?? fallback;
};
const TOTAL = Number(arg("chunks", sized("100000", "40")));
const PER_DOC = Number(arg("per-doc", sized("1000", "20")));
const KEY = "default.kb_ingest_bench";
const CHUNKING = { size: 800, overlap: 100 };
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0];
const log = (s: string) => process.stdout.write(`${s}\n`);

const config = loadSearchConfig(process.env, { embedding: { cacheSize: 0 } });
const embedder = new CachedEmbedder(await loadLocalEmbedder(config), 0);
const store = new EmbeddedStore();
const ingester = new Ingester({
  kbs: new KnowledgeBases(new ResourceView(), store),
  store,
  embedders: new Map([[embedder.name, embedder]]),
  metrics: searchMetrics(createRegistry()),
  logger: createLogger({ name: "ingest-bench", level: "warn" }),
});

// Documents whose text the chunker cuts back into PER_DOC chunks: the bench corpus's chunks
// without their overlap, joined.
const docText = (doc: number) => {
  const parts = chunks(PER_DOC, (t) => chunkText(t, CHUNKING), 100 + doc);
  return parts.map((c) => c.slice(0, CHUNKING.size - CHUNKING.overlap)).join("\n\n");
};

log(
  `${embedder.name}, documents threads ${config.embedding.threads ?? "every core"}; ${TOTAL} chunks in documents of ~${PER_DOC}; load ${load()}`,
);
const t0 = performance.now();
let done = 0;
for (let doc = 0; done < TOTAL; doc++) {
  done += (await ingester.upsert(KEY, `doc${doc}`, { docsName: `doc${doc}`, text: docText(doc) })).chunks;
  const s = (performance.now() - t0) / 1000;
  log(`${done} chunks in ${s.toFixed(0)} s: ${(done / s).toFixed(1)} chunks/s (load ${load()})`);
}
const seconds = (performance.now() - t0) / 1000;
log(
  `ingested ${done} chunks end to end in ${seconds.toFixed(0)} s (${(seconds / 60).toFixed(1)} min): ${(done / seconds).toFixed(1)} chunks/s`,
);
const stats = await store.stats(KEY);
expectCount(`chunks the store holds under ${KEY}`, stats?.chunks ?? 0, done);
const [probe] = await embedder.embedUncached([docText(0).slice(0, CHUNKING.size - CHUNKING.overlap)]);
const hits = await store.query({ keys: [KEY], vector: probe as Float32Array, limit: 1, minScore: 0 });
expectWork(
  hits[0]?.record.docsId === "doc0",
  `a search by doc0's first chunk finds doc0 (found ${hits[0]?.record.docsId})`,
);
workChecked(`${done} chunks stored in ${stats?.documents} documents, found by their own text`);
await store.close();
await embedder.close();
