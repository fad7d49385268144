// Qdrant throughput and CPU per vector query, the capacity model's input for the store
// (docs/scaling.md): one server, and a three-peer cluster (3 shards × 2 copies, as search creates
// them there), each holding N chunks of one knowledge base in search's layout (tenant index on
// knowledgeId, HNSW per tenant: m 0, payload_m 16, ef_construct 128; queries hnsw_ef 128, top 10,
// filtered on the tenant). Closed loops of 1, 4 and 16 concurrent queries for a few seconds each:
// queries/s, p50/p99, and the servers' CPU (user + sys from /proc) per query.
// Vectors: synthetic 384-dimension unit vectors in groups of 10 around random centres (no model
// run), so the figures are the store's alone; recall@10 against brute force on 20 queries proves
// the index answers.
// Run: node bench/search/qdrant-throughput.ts [--chunks 100000] [--setups single,cluster]
//   knobs: SECONDS=8 (per concurrency level) LEVELS=1,4,16 INDEX_TIMEOUT_S=1200
//   --smoke: 2,000 chunks, 1 s per level (bench/work.ts)

import { type QdrantServer, startQdrant } from "../../test/ground/qdrant.ts";
import { startQdrantCluster } from "../../test/ground/qdrant-cluster.ts";
import { cpuMs } from "../gateway/harness.ts";
import { expectAtLeast, expectCount, sized, workChecked } from "../work.ts";

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const CHUNKS = Number(arg("chunks") ?? sized(100_000, 2_000));
const SETUPS = (arg("setups") ?? "single,cluster").split(",");
const SECONDS = Number(process.env.SECONDS_PER_LEVEL ?? sized(8, 1));
const LEVELS = (process.env.LEVELS ?? "1,4,16").split(",").map(Number);
const INDEX_TIMEOUT_S = Number(process.env.INDEX_TIMEOUT_S ?? 1200);
const DIMS = 384;
const NAME = "bench_throughput";

/** A seeded uniform generator in [-0.5, 0.5). */
function generator(seed: number): () => number {
  let s = seed % 2147483647 || 1;
  return () => {
    s = (s * 16807) % 2147483647;
    return s / 2147483647 - 0.5;
  };
}

const unit = (v: number[]) => {
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
};

/** The centre of group g: points come in groups of 10 around one centre, as passages of a topic. */
const centre = (g: number) => {
  const rnd = generator(g + 1);
  return Array.from({ length: DIMS }, rnd);
};

/** Deterministic clustered unit vectors: point i is its group's centre plus a little noise. */
function vectors(n: number, seed: number, groupOf: (i: number) => number): number[][] {
  const noise = generator(seed);
  return Array.from({ length: n }, (_, i) => unit(centre(groupOf(i)).map((x) => x + noise() * 0.1)));
}

async function api(url: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const send = () =>
    fetch(`${url}/${path}`, {
      method,
      headers: { "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(120_000),
    });
  // Every call here is idempotent: one more attempt when a kept-alive socket the server had just
  // closed was reused (undici reports EPIPE or "other side closed").
  const res = await send().catch(() => send());
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
  return (JSON.parse(text) as { result: unknown }).result;
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))] ?? 0;

const points = vectors(CHUNKS, 7, (i) => Math.floor(i / 10));

async function measure(setup: string, url: string, servers: QdrantServer[], params: Record<string, number>) {
  await api(url, "PUT", `collections/${NAME}`, {
    vectors: { size: DIMS, distance: "Cosine" },
    hnsw_config: { m: 0, payload_m: 16, ef_construct: 128 },
    ...params,
  });
  await api(url, "PUT", `collections/${NAME}/index?wait=true`, {
    field_name: "knowledgeId",
    field_schema: { type: "keyword", is_tenant: true },
  });
  const t0 = Date.now();
  for (let i = 0; i < CHUNKS; i += 1000) {
    const batch = points
      .slice(i, i + 1000)
      .map((vector, j) => ({ id: i + j + 1, vector, payload: { knowledgeId: "kb" } }));
    await api(url, "PUT", `collections/${NAME}/points?wait=true`, { points: batch });
  }
  const ingestS = (Date.now() - t0) / 1000;
  const deadline = Date.now() + INDEX_TIMEOUT_S * 1000;
  for (;;) {
    const info = (await api(url, "GET", `collections/${NAME}`)) as { status: string; points_count: number };
    if (info.status === "green") {
      expectCount(`${setup}: points stored`, info.points_count, CHUNKS);
      break;
    }
    if (Date.now() > deadline) throw new Error(`${setup}: not green within ${INDEX_TIMEOUT_S} s`);
    await new Promise((r) => setTimeout(r, 2000));
  }
  console.log(
    `${setup}: ${CHUNKS} chunks stored in ${ingestS.toFixed(1)} s, indexed after ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  // Queries near a group of the data (a question about a topic the knowledge base holds).
  const queries = vectors(200, 99, (q) => (q * 7919) % Math.floor(CHUNKS / 10));
  const query = (v: number[], limit = 10) =>
    api(url, "POST", `collections/${NAME}/points/query`, {
      query: v,
      limit,
      filter: { must: [{ key: "knowledgeId", match: { value: "kb" } }] },
      params: { hnsw_ef: 128 },
    }) as Promise<{ points: Array<{ id: number }> }>;
  // Recall@10 against brute force on 20 queries: the index answers what it holds.
  let hits = 0;
  for (const q of queries.slice(0, 20)) {
    const exact = points
      .map((p, i) => ({ id: i + 1, s: p.reduce((a, x, k) => a + x * (q[k] as number), 0) }))
      .sort((a, b) => b.s - a.s)
      .slice(0, 10)
      .map((x) => x.id);
    const got = new Set((await query(q)).points.map((p) => p.id));
    hits += exact.filter((id) => got.has(id)).length;
  }
  const recall = hits / 200;
  expectAtLeast(`${setup}: recall@10 × 1000`, Math.round(recall * 1000), 800);
  for (const level of LEVELS) {
    const latencies: number[] = [];
    const cpu0 = servers.reduce((a, s) => a + cpuMs(s.proc.child.pid as number), 0);
    const end = Date.now() + SECONDS * 1000;
    let n = 0;
    await Promise.all(
      Array.from({ length: level }, async () => {
        while (Date.now() < end) {
          const t = performance.now();
          const r = await query(queries[n++ % queries.length] as number[]);
          expectCount("hits per answer", r.points.length, 10);
          latencies.push(performance.now() - t);
        }
      }),
    );
    const cpu = servers.reduce((a, s) => a + cpuMs(s.proc.child.pid as number), 0) - cpu0;
    console.log(
      `  ${setup} c=${level}: ${(latencies.length / SECONDS).toFixed(0)} queries/s, p50 ${quantile(latencies, 0.5).toFixed(2)} / p99 ${quantile(latencies, 0.99).toFixed(2)} ms, Qdrant CPU ${(cpu / latencies.length).toFixed(2)} ms per query (recall@10 ${recall.toFixed(3)})`,
    );
  }
}

for (const setup of SETUPS) {
  if (setup === "single") {
    const q = await startQdrant();
    try {
      await measure("single server", q.url, [q], {});
    } finally {
      await q.stop();
    }
  } else {
    const c = await startQdrantCluster({ peers: 3 });
    try {
      const url = c.peers[0]?.url as string;
      await measure("3-peer cluster", url, c.peers, {
        shard_number: 3,
        replication_factor: 2,
        write_consistency_factor: 1,
      });
    } finally {
      await c.stop();
    }
  }
}
workChecked(`${CHUNKS} chunks per setup stored and indexed, every query answered with 10 hits, recall checked`);
