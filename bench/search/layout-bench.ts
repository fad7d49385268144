// Qdrant multitenancy layouts compared on the vendored server: TENANTS knowledge bases of
// POINTS chunks each (384-dim cosine, the local model's size), stored as one collection per
// knowledge base versus one shared collection with a tenant payload index (is_tenant, per-tenant
// HNSW via payload_m). Measures the time to create and fill, the server's resident memory and
// storage on disk, and a filtered search's latency. Bounded; stops by itself.
//
//   node bench/search/layout-bench.ts        (TENANTS=100 POINTS=200 QUERIES=200)
//   --smoke: 3 knowledge bases of 50 chunks, 10 queries (bench/work.ts). Every layout must hold
//   every point, and every filtered query must answer 10 hits of its own knowledge base.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { startQdrant } from "../../test/ground/qdrant.ts";
import { expectCount, expectWork, sized, workChecked } from "../work.ts";
import { rng } from "./corpus.ts";

const TENANTS = Number(process.env.TENANTS ?? sized(100, 3));
const POINTS = Number(process.env.POINTS ?? sized(200, 50));
const QUERIES = Number(process.env.QUERIES ?? sized(200, 10));
const DIMS = 384;
const r = rng(3);
const vec = () => {
  const v = Array.from({ length: DIMS }, () => r() - 0.5);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.floor((p / 100) * (xs.length - 1))] as number;

async function run(layout: "per-kb" | "shared"): Promise<string> {
  const q = await startQdrant();
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${q.url}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { result: unknown }).result;
  };
  const create = async (name: string, shared: boolean) => {
    await api("PUT", `/collections/${name}`, {
      vectors: { size: DIMS, distance: "Cosine" },
      hnsw_config: shared ? { m: 0, payload_m: 16, ef_construct: 128 } : { m: 16, ef_construct: 128 },
    });
    const schema = shared ? { type: "keyword", is_tenant: true } : "keyword";
    await api("PUT", `/collections/${name}/index?wait=true`, { field_name: "knowledgeId", field_schema: schema });
    await api("PUT", `/collections/${name}/index?wait=true`, { field_name: "docsId", field_schema: "keyword" });
  };
  const started = performance.now();
  if (layout === "shared") await create("shared", true);
  let id = 1;
  for (let t = 0; t < TENANTS; t++) {
    const name = layout === "shared" ? "shared" : `kb_${t}`;
    if (layout === "per-kb") await create(name, false);
    const points = Array.from({ length: POINTS }, () => ({
      id: id++,
      vector: vec(),
      payload: { knowledgeId: `kb_${t}`, docsId: "d" },
    }));
    await api("PUT", `/collections/${name}/points?wait=true`, { points });
  }
  const fillS = (performance.now() - started) / 1000;
  let stored = 0;
  for (const name of layout === "shared" ? ["shared"] : Array.from({ length: TENANTS }, (_, t) => `kb_${t}`)) {
    stored += ((await api("POST", `/collections/${name}/points/count`, { exact: true })) as { count: number }).count;
  }
  expectCount(`points stored in the ${layout} layout`, stored, TENANTS * POINTS);
  const lat: number[] = [];
  for (let i = 0; i < QUERIES; i++) {
    const t = i % TENANTS;
    const name = layout === "shared" ? "shared" : `kb_${t}`;
    const s = performance.now();
    const { points } = (await api("POST", `/collections/${name}/points/query`, {
      query: vec(),
      limit: 10,
      filter: { must: [{ key: "knowledgeId", match: { value: `kb_${t}` } }] },
      with_payload: true,
    })) as { points: { payload: { knowledgeId: string } }[] };
    lat.push(performance.now() - s);
    expectCount(`hits of ${layout} query ${i} (k=10)`, points.length, Math.min(10, POINTS));
    expectWork(
      points.every((p) => p.payload.knowledgeId === `kb_${t}`),
      `${layout} query ${i} answers with points of kb_${t} only`,
    );
  }
  const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${q.proc.child.pid}/status`, "utf8"))?.[1];
  const disk = execFileSync("du", ["-sm", `${q.dir}/storage`])
    .toString()
    .split("\t")[0];
  await q.stop();
  return `| ${layout} | ${TENANTS} × ${POINTS} | ${fillS.toFixed(1)} s | ${Math.round(Number(rss) / 1024)} MB | ${disk} MB | ${pct(lat, 50).toFixed(2)} / ${pct(lat, 99).toFixed(2)} ms |`;
}

const rows = [await run("per-kb"), await run("shared")];
process.stdout.write(
  "| layout | knowledge bases × chunks | create + fill | server RSS | storage | query p50 / p99 |\n",
);
process.stdout.write("|---|---|---|---|---|---|\n");
for (const row of rows) process.stdout.write(`${row}\n`);
workChecked(
  `both layouts hold ${TENANTS * POINTS} points; ${QUERIES} filtered queries each answered from their tenant`,
);
