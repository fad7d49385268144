// Search benchmark at 100k chunks: end-to-end search latency (HTTP request through the app:
// auth, query embedding with the real model, HNSW query, hybrid rerank), recall@10 of the HNSW
// index against exact search, and embedding throughput. Bounded; stops by itself.
//
//   node bench/search/search-bench.ts            (CHUNKS=100000 QUERIES=300 REAL=1000 by default)
//
// The 100k chunk vectors: REAL passages embedded by the model, plus synthetic vectors made as
// normalised mixtures of two real embeddings with Gaussian noise, so the index holds a realistic
// clustered distribution without an hour of embedding on two cores.
import { hashKey } from "@capstan/shared";
import type { KnowledgeBase, SearchKey } from "@capstan/shared/api";
import { ResourceView } from "@capstan/shared/resource-view";
import { buildApp, loadLocalEmbedder, loadSearchConfig } from "../../services/search/src/index.ts";
import { EmbeddedStore } from "../../services/search/src/store/embedded.ts";
import { type ChunkWithVector, embeddingIdFor } from "../../services/search/src/store/types.ts";
import { passages, questions, rng } from "./corpus.ts";

const CHUNKS = Number(process.env.CHUNKS ?? 100_000);
const QUERIES = Number(process.env.QUERIES ?? 300);
const REAL = Number(process.env.REAL ?? 1000);
const THREADS = Number(process.env.CAPSTAN_EMBEDDING_THREADS ?? 1);
const KB = "kb_bench";

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};
const ms = (x: number) => `${x.toFixed(2)} ms`;
const log = (s: string) => process.stdout.write(`${s}\n`);

function gaussian(r: () => number): number {
  return Math.sqrt(-2 * Math.log(r() + 1e-12)) * Math.cos(2 * Math.PI * r());
}

const config = loadSearchConfig({}, { embedding: { threads: THREADS, cacheSize: 0 } });
const embedder = await loadLocalEmbedder(config);
const dims = embedder.dimensions;
log(`model ${embedder.name} (${dims} dims), ${THREADS} thread(s); ${CHUNKS} chunks, ${REAL} real, ${QUERIES} queries`);

// 1. Embedding throughput (documents, batches of 32) and single-query latency.
const texts = passages(REAL);
let t0 = performance.now();
const real = await embedder.embed(texts);
const docSeconds = (performance.now() - t0) / 1000;
log(
  `embedding throughput: ${(REAL / docSeconds).toFixed(1)} chunks/s (${REAL} passages of ~${Math.round(texts.reduce((s, x) => s + x.length, 0) / REAL)} chars, batch 32)`,
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

// 2. The 100k chunk vectors and the index.
const r = rng(7);
const matrix = new Float32Array(CHUNKS * dims);
for (let i = 0; i < CHUNKS; i++) {
  const row = matrix.subarray(i * dims, (i + 1) * dims);
  if (i < REAL) {
    row.set(real[i] as Float32Array);
    continue;
  }
  const a = real[Math.floor(r() * REAL)] as Float32Array;
  const b = real[Math.floor(r() * REAL)] as Float32Array;
  const w = 0.6 + 0.4 * r();
  let norm = 0;
  for (let d = 0; d < dims; d++) {
    const x = w * (a[d] as number) + (1 - w) * (b[d] as number) + 0.03 * gaussian(r);
    row[d] = x;
    norm += x * x;
  }
  norm = Math.sqrt(norm);
  for (let d = 0; d < dims; d++) row[d] = (row[d] as number) / norm;
}
const store = new EmbeddedStore();
await store.ensureCollection({
  knowledgeId: KB,
  model: embedder.name,
  dimensions: dims,
  chunking: { size: 800, overlap: 100 },
});
t0 = performance.now();
const PER_DOC = 1000;
for (let doc = 0; doc * PER_DOC < CHUNKS; doc++) {
  const chunks: ChunkWithVector[] = [];
  for (let i = doc * PER_DOC; i < Math.min(CHUNKS, (doc + 1) * PER_DOC); i++) {
    const text = texts[i % REAL] as string;
    chunks.push({
      vector: matrix.subarray(i * dims, (i + 1) * dims),
      record: {
        embeddingId: embeddingIdFor(KB, `doc${doc}`, i, text),
        knowledgeId: KB,
        docsId: `doc${doc}`,
        docsName: `Document ${doc}`,
        chunkIndex: i - doc * PER_DOC,
        totalChunks: PER_DOC,
        text,
      },
    });
  }
  await store.replaceDocument(KB, `doc${doc}`, chunks);
}
log(
  `index build (HNSW, M=16, ef_add=128, ef_search=256): ${((performance.now() - t0) / 1000).toFixed(1)} s for ${CHUNKS} chunks`,
);

// 3. Recall@10 of the index against exact (brute-force) search: a k=10 query, and the
//    service's own candidate query (k=30, of which the best 10 count).
let found10 = 0;
let found30 = 0;
const vectorMs: number[] = [];
const inExact = (exact: Set<number>, hits: { record: { docsId: string; chunkIndex: number } }[]) =>
  hits.filter((h) => exact.has(Number(h.record.docsId.slice(3)) * PER_DOC + h.record.chunkIndex)).length;
for (const q of qvecs) {
  const scores = new Float32Array(CHUNKS);
  for (let i = 0; i < CHUNKS; i++) {
    let dot = 0;
    const off = i * dims;
    for (let d = 0; d < dims; d++) dot += (matrix[off + d] as number) * (q[d] as number);
    scores[i] = dot;
  }
  const exact = new Set(
    Array.from(scores.keys())
      .sort((a, b) => (scores[b] as number) - (scores[a] as number))
      .slice(0, 10),
  );
  t0 = performance.now();
  const hits = await store.query({ knowledgeIds: [KB], vector: q, limit: 10, minScore: 0 });
  vectorMs.push(performance.now() - t0);
  found10 += inExact(exact, hits);
  const candidates = await store.query({ knowledgeIds: [KB], vector: q, limit: 30, minScore: 0 });
  found30 += inExact(exact, candidates.slice(0, 10));
}
const recall = (n: number) => (n / (qvecs.length * 10)).toFixed(4);
log(
  `recall@10 vs exact search: ${recall(found10)} (k=10 query), ${recall(found30)} (k=30 candidate query, as the service runs it); ${qvecs.length} queries`,
);
log(`vector query alone (k=10): p50 ${ms(pct(vectorMs, 50))}, p99 ${ms(pct(vectorMs, 99))}`);

// 4. End-to-end: POST /v1/rag/search through the app (auth, embed, vector query k=30, rerank).
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
const app = await buildApp({ logLevel: "warn", embedding: { cacheSize: 0 } }, { view, store, embedders: [embedder] });
const e2e: number[] = [];
for (const [i, text] of qtexts.entries()) {
  t0 = performance.now();
  const res = await app.inject({
    method: "POST",
    url: "/v1/rag/search",
    headers: { authorization: "Bearer bench-key" },
    payload: { knowledgeIds: [KB], text: `${text} #${i}`, maxResults: 10, minSimilarity: 0.5 },
  });
  e2e.push(performance.now() - t0);
  if (res.statusCode !== 200) throw new Error(`search failed: ${res.statusCode} ${res.body}`);
}
log(
  `search end-to-end (${CHUNKS} chunks, incl. query embedding + rerank): p50 ${ms(pct(e2e, 50))}, p99 ${ms(pct(e2e, 99))}`,
);
await app.close();
await store.close();
await embedder.close();
