// What a model change costs on a real Qdrant (the vendored server, started privately): search
// latency on the serving vector set alone and while a new model's vector set is being filled
// beside it in another collection, and the time of the switch itself (one registry upsert).
// Run: node bench/search/switch-bench.ts [--chunks 1000] [--rounds 5]   (--smoke: 100 chunks, 2 rounds)
// Every search must answer 10 hits, and after each switch the serving vector set is the model
// switched to; otherwise the run stops (bench/work.ts).
import { parseArgs } from "node:util";
import { QdrantStore } from "../../services/search/src/store/qdrant.ts";
import { type CollectionInfo, embeddingIdFor } from "../../services/search/src/store/types.ts";
import { startQdrant } from "../../test/ground/qdrant.ts";
import { expectCount, expectWork, sized, workChecked } from "../work.ts";
import { rng } from "./corpus.ts";

const { values } = parseArgs({
  options: { chunks: { type: "string" }, rounds: { type: "string" }, smoke: { type: "boolean" } },
});
const CHUNKS = Number(values.chunks ?? sized(1000, 100));
const ROUNDS = Number(values.rounds ?? sized(5, 2));
const PER_DOC = 50;
const GRACE_MS = 1000;
const KB = "kb_bench";
const random = rng(7);
const unitVector = (dims: number) => {
  const v = Float32Array.from({ length: dims }, () => random() - 0.5);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};
const models = [
  { model: "bench:a", dims: 384 },
  { model: "bench:b", dims: 512 },
];
const info = (m: (typeof models)[number]): CollectionInfo => ({
  knowledgeId: KB,
  model: m.model,
  dimensions: m.dims,
  chunking: { size: 800, overlap: 100 },
});

const q = await startQdrant();
const store = new QdrantStore({ url: q.url, collectionPrefix: "bench_switch", retireGraceMs: GRACE_MS });

async function fill(dims: number): Promise<void> {
  for (let d = 0; d < CHUNKS / PER_DOC; d++) {
    const docsId = `d${d}`;
    const chunks = Array.from({ length: PER_DOC }, (_, i) => ({
      vector: unitVector(dims),
      record: {
        embeddingId: embeddingIdFor(KB, docsId, i, `t${i}`),
        knowledgeId: KB,
        docsId,
        docsName: docsId,
        chunkIndex: i,
        totalChunks: PER_DOC,
        text: `t${i}`,
      },
    }));
    await store.replaceDocument(KB, docsId, chunks);
  }
}

async function latency(dims: number, n = sized(300, 20)): Promise<string> {
  const t: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const hits = await store.query({ keys: [KB], vector: unitVector(dims), limit: 10, minScore: 0 });
    t.push(performance.now() - started);
    expectCount(`hits of search ${i} on the serving vector set`, hits.length, 10);
  }
  t.sort((a, b) => a - b);
  return `p50 ${t[Math.floor(n / 2)]?.toFixed(2)} ms, p99 ${t[Math.floor(n * 0.99)]?.toFixed(2)} ms`;
}

try {
  const [a, b] = models as [(typeof models)[number], (typeof models)[number]];
  await store.ensureCollection(info(a));
  await fill(a.dims);
  console.log(`${CHUNKS} chunks, search on the serving vector set alone: ${await latency(a.dims)}`);
  await store.ensureCollection(info(b));
  await fill(b.dims);
  console.log(`same, with ${CHUNKS} chunks of a new model built beside it: ${await latency(a.dims)}`);
  const switches: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const [to, next] = r % 2 === 0 ? [b, a] : [a, b];
    const started = performance.now();
    const serving = await store.switchVectorSet(KB, to.model);
    switches.push(performance.now() - started);
    expectWork(serving?.model === to.model, `switch ${r + 1} serves ${to.model} (serves ${serving?.model})`);
    await new Promise((res) => setTimeout(res, GRACE_MS + 200)); // the retired vector set goes
    await store.ensureCollection(info(next));
    await fill(next.dims);
  }
  console.log(`switch: ${switches.map((x) => `${x.toFixed(1)} ms`).join(", ")}`);
  expectCount("chunks of the serving vector set after the switches", (await store.stats(KB))?.chunks ?? 0, CHUNKS);
  workChecked(`${ROUNDS} switches, each serving its model with ${CHUNKS} chunks; every search answered 10 hits`);
} finally {
  await store.close();
  await q.stop();
}
