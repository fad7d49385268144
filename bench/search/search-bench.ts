// Search benchmark on both vector stores side by side: for each backend and corpus size,
// ingestion throughput into the store (chunks/s, vectors given), recall@10 of its index against
// exact search, the vector query alone, and end-to-end search latency (HTTP request through the
// app: auth, query embedding with the real model, vector query, hybrid rerank). Bounded; stops
// by itself.
//
//   node bench/search/search-bench.ts [--backend embedded,qdrant] [--chunks 10000,100000]
//                                     [--qdrant-url URL]   (default: starts the vendored server)
//   knobs: QUERIES=300 REAL=1000 CAPSTAN_EMBEDDING_THREADS (default every core) QDRANT_API_KEY=...
//          INGEST_CONCURRENCY=1 (documents written at once) INDEX_TIMEOUT_S=1200 (Qdrant until green)
//   --smoke: 2,000 chunks, 20 queries, 100 real passages (bench/work.ts)
// Every figure is checked before it is printed: the store holds every chunk written, recall is
// measured on non-empty answers, and every end-to-end search answers with hits of the benchmark's
// knowledge base among the exact nearest (an app that searches the wrong key answers [] at once).
// (embedding alone, against onnxruntime's Python runtime: embed-bench.ts; ingestion end to end:
// ingest-bench.ts)
import { readFileSync } from "node:fs";
import { hashKey } from "@capstan/shared";
import type { KnowledgeBase, SearchKey } from "@capstan/shared/api";
import { ResourceView } from "@capstan/shared/resource-view";
import { buildApp, loadLocalEmbedder, loadSearchConfig, type SearchResult } from "../../services/search/src/index.ts";
import { EmbeddedStore } from "../../services/search/src/store/embedded.ts";
import { QdrantStore } from "../../services/search/src/store/qdrant.ts";
import { storeKey, type VectorStore } from "../../services/search/src/store/types.ts";
import { dropCollections, type QdrantServer, startQdrant } from "../../test/ground/qdrant.ts";
import { expectAtLeast, expectCount, expectWork, sized, workChecked } from "../work.ts";
import { passages, questions } from "./corpus.ts";
import { chunkMatrix, documentChunks, exactTop10, inExact, PER_DOC } from "./vectors.ts";

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const BACKENDS = (arg("backend") ?? "embedded,qdrant").split(",") as ("embedded" | "qdrant")[];
const SIZES = (arg("chunks") ?? process.env.CHUNKS ?? sized("10000,100000", "2000")).split(",").map(Number);
const QUERIES = Number(process.env.QUERIES ?? sized(300, 20));
const REAL = Number(process.env.REAL ?? sized(1000, 100));
const INGEST_CONCURRENCY = Number(process.env.INGEST_CONCURRENCY ?? 1);
const INDEX_TIMEOUT_S = Number(process.env.INDEX_TIMEOUT_S ?? 1200);
const THREADS = process.env.CAPSTAN_EMBEDDING_THREADS ? Number(process.env.CAPSTAN_EMBEDDING_THREADS) : undefined;
/** The knowledge id clients send, and the store key search addresses it by (`<namespace>.<kb_id>`). */
const KB = "kb_bench";
const KEY = storeKey("default", KB);
const PREFIX = "capstan_bench";

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};
const ms = (x: number) => `${x.toFixed(2)} ms`;
const log = (s: string) => process.stdout.write(`${s}\n`);
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

const config = loadSearchConfig({}, { embedding: { ...(THREADS ? { threads: THREADS } : {}), cacheSize: 0 } });
const embedder = await loadLocalEmbedder(config);
const dims = embedder.dimensions;
const maxSize = Math.max(...SIZES);
log(
  `model ${embedder.name} (${dims} dims), ${THREADS ?? "every core's"} thread(s) for documents; backends ${BACKENDS.join(", ")}; sizes ${SIZES.join(", ")}`,
);

// 1. Embedding throughput (the documents worker, batches of 32) and single-query latency.
const texts = passages(REAL);
let t0 = performance.now();
const real = await embedder.embedDocuments(texts);
log(
  `embedding throughput: ${(REAL / ((performance.now() - t0) / 1000)).toFixed(1)} chunks/s (${REAL} passages, batch 32)`,
);
const qtexts = questions(QUERIES);
const qEmbed: number[] = [];
const qvecs: Float32Array[] = [];
for (const q of qtexts) {
  t0 = performance.now();
  const [v] = await embedder.embed([q]);
  qEmbed.push(performance.now() - t0);
  qvecs.push(v as Float32Array);
}
log(`query embedding: p50 ${ms(pct(qEmbed, 50))}, p99 ${ms(pct(qEmbed, 99))}`);
const matrix = chunkMatrix(real, maxSize, dims);

// 2. The Qdrant server: given, or the vendored binary on a free loopback port.
let qdrant: QdrantServer | undefined;
let qdrantUrl = arg("qdrant-url") ?? process.env.QDRANT_URL;
if (BACKENDS.includes("qdrant") && !qdrantUrl) {
  qdrant = await startQdrant();
  qdrantUrl = qdrant.url;
  log(`qdrant: started the vendored server at ${qdrantUrl}`);
}

function makeStore(backend: "embedded" | "qdrant"): VectorStore {
  if (backend === "embedded") return new EmbeddedStore();
  return new QdrantStore({
    url: qdrantUrl as string,
    apiKey: process.env.QDRANT_API_KEY,
    collectionPrefix: PREFIX,
    timeoutMs: 60_000,
  });
}

/** Qdrant indexes in the background after writes: wait until the collection is green. */
async function qdrantIndexed(store: QdrantStore): Promise<void> {
  const name = store.collectionName({ model: embedder.name, dimensions: dims });
  const headers: Record<string, string> = process.env.QDRANT_API_KEY ? { "api-key": process.env.QDRANT_API_KEY } : {};
  for (let i = 0; i < INDEX_TIMEOUT_S * 2; i++) {
    const res = await fetch(`${qdrantUrl}/collections/${name}`, { headers });
    const info = (await res.json()) as { result: { status: string } };
    if (info.result.status === "green") return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`qdrant did not finish indexing within ${INDEX_TIMEOUT_S} s (INDEX_TIMEOUT_S)`);
}

function appFor(store: VectorStore) {
  const view = new ResourceView();
  view.replace("KnowledgeBase", [
    {
      apiVersion: "capstan.dev/v1alpha1",
      kind: "KnowledgeBase",
      metadata: { name: "bench", namespace: "default" },
      spec: {
        embedding: { provider: "local", model: "all-MiniLM-L6-v2" },
        chunking: { size: 800, overlap: 100 },
        sources: [],
        refreshInterval: "24h",
      },
    } as KnowledgeBase,
  ]);
  view.replace("SearchKey", [
    {
      apiVersion: "capstan.dev/v1alpha1",
      kind: "SearchKey",
      metadata: { name: "bench", namespace: "default" },
      spec: { keyName: "bench", knowledgeIds: [KB] },
      status: { keyHash: hashKey("bench-key") },
    } as SearchKey,
  ]);
  return buildApp({ logLevel: "warn", embedding: { cacheSize: 0 } }, { view, store, embedders: [embedder] });
}

/**
 * 1 when the answer holds hits of the benchmark's knowledge base, one of them among the query's
 * exact top 10; 0 when it holds hits but none of those. An empty answer stops the benchmark.
 */
function agreesWithExact(data: SearchResult[] | null, exact: Set<number>, i: number): number {
  expectWork(
    Array.isArray(data) && data.length > 0,
    `end-to-end search ${i} returns hits of ${KB} (it returned ${JSON.stringify(data)})`,
  );
  for (const hit of data) {
    expectWork(hit.knowledgeId === KB, `end-to-end search ${i} returns hits of ${KB} (one was of ${hit.knowledgeId})`);
  }
  const hits = data.map((h) => ({ record: h.metadata }));
  return inExact(exact, hits) > 0 ? 1 : 0;
}

/** The store's resident memory: the Qdrant server's RSS, or this process's growth for the embedded store. */
function memoryOf(backend: "embedded" | "qdrant", rssBefore: number): string {
  const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
  if (backend === "embedded") return `+${mb(process.memoryUsage().rss - rssBefore)} in the process`;
  if (!qdrant) return "n/a (a server given by URL)";
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${qdrant.proc.child.pid}/status`, "utf8"))?.[1];
  return `${mb(Number(kb) * 1024)} server RSS`;
}

interface Row {
  backend: string;
  size: number;
  ingest: string;
  indexing: string;
  memory: string;
  recall: string;
  vector: string;
  e2e: string;
}
const rows: Row[] = [];

for (const size of SIZES) {
  t0 = performance.now();
  const exact = exactTop10(matrix, size, dims, qvecs);
  log(
    `\n== ${size} chunks (exact top 10 of ${qvecs.length} queries in ${((performance.now() - t0) / 1000).toFixed(1)} s)`,
  );
  for (const backend of BACKENDS) {
    const store = makeStore(backend);
    await store.ensureCollection({
      knowledgeId: KEY,
      model: embedder.name,
      dimensions: dims,
      chunking: { size: 800, overlap: 100 },
    });
    // 3. Ingestion: documents of 1,000 chunks, vectors given (embedding is measured above),
    //    INGEST_CONCURRENCY documents in flight (default 1, as the service's ingester writes).
    const rssBefore = process.memoryUsage().rss;
    t0 = performance.now();
    let nextDoc = 0;
    await Promise.all(
      Array.from({ length: INGEST_CONCURRENCY }, async () => {
        for (let doc = nextDoc++; doc * PER_DOC < size; doc = nextDoc++) {
          await store.replaceDocument(KEY, `doc${doc}`, documentChunks(KEY, doc, matrix, size, dims, texts));
        }
      }),
    );
    const ingestS = (performance.now() - t0) / 1000;
    const stored = await store.stats(KEY);
    expectCount(`chunks the ${backend} store holds under ${KEY}`, stored?.chunks ?? 0, size);
    let indexing = "in the write (synchronous)";
    if (store instanceof QdrantStore) {
      t0 = performance.now();
      await qdrantIndexed(store);
      indexing = `${((performance.now() - t0) / 1000).toFixed(1)} s more until green`;
    }
    const memory = memoryOf(backend, rssBefore);
    log(
      `${backend}: ingestion ${(size / ingestS).toFixed(0)} chunks/s (${ingestS.toFixed(1)} s); indexing ${indexing}; memory ${memory}; load ${load()}`,
    );

    // 4. Recall@10 against exact search, and the vector query alone (k=10).
    let found = 0;
    const vectorMs: number[] = [];
    for (const [i, q] of qvecs.entries()) {
      t0 = performance.now();
      const hits = await store.query({ keys: [KEY], vector: q, limit: 10, minScore: 0 });
      vectorMs.push(performance.now() - t0);
      expectCount(`hits of ${backend}'s vector query ${i} (k=10, no threshold)`, hits.length, 10);
      found += inExact(exact[i] as Set<number>, hits);
    }
    const recall = (found / (qvecs.length * 10)).toFixed(4);
    log(`${backend}: recall@10 ${recall}; vector query p50 ${ms(pct(vectorMs, 50))}, p99 ${ms(pct(vectorMs, 99))}`);

    // 5. End-to-end through the app (auth, embed, vector query k=30, rerank), distinct texts.
    const app = await appFor(store);
    const e2e: number[] = [];
    let agreeing = 0;
    for (const [i, text] of qtexts.entries()) {
      t0 = performance.now();
      const res = await app.inject({
        method: "POST",
        url: "/v1/rag/search",
        headers: { authorization: "Bearer bench-key" },
        payload: { knowledgeIds: [KB], text: `${text} #${i}`, maxResults: 10, minSimilarity: 0.5 },
      });
      e2e.push(performance.now() - t0);
      expectWork(res.statusCode === 200, `end-to-end search ${i} answered 200 (saw ${res.statusCode} ${res.body})`);
      agreeing += agreesWithExact(res.json().data, exact[i] as Set<number>, i);
    }
    // The texts differ from the exact queries by their " #i" and the hits are reranked, so a few
    // answers may miss the exact top 10; most must not.
    expectAtLeast(
      `${backend}'s end-to-end answers with a hit among the exact top 10`,
      agreeing,
      Math.ceil(0.8 * qtexts.length),
    );
    log(
      `${backend}: search end-to-end p50 ${ms(pct(e2e, 50))}, p99 ${ms(pct(e2e, 99))} (${agreeing}/${qtexts.length} answers hit the exact top 10); load ${load()}`,
    );
    await app.close();
    await store.dropCollection(KEY);
    await store.close();
    if (backend === "qdrant") await dropCollections(qdrantUrl as string, PREFIX);
    rows.push({
      backend,
      size,
      ingest: `${(size / ingestS).toFixed(0)}`,
      indexing,
      memory,
      recall,
      vector: `${ms(pct(vectorMs, 50))} / ${ms(pct(vectorMs, 99))}`,
      e2e: `${ms(pct(e2e, 50))} / ${ms(pct(e2e, 99))}`,
    });
  }
}

log(
  "\n| backend | chunks | ingestion chunks/s | indexing | memory | recall@10 | vector p50 / p99 | end-to-end p50 / p99 |",
);
log("|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  log(
    `| ${r.backend} | ${r.size} | ${r.ingest} | ${r.indexing} | ${r.memory} | ${r.recall} | ${r.vector} | ${r.e2e} |`,
  );
}
workChecked(
  `${rows.length} runs (${BACKENDS.join(", ")} × ${SIZES.join(", ")} chunks): every chunk stored, every query answered with hits`,
);
await qdrant?.stop();
await embedder.close();
