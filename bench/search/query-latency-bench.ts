// Query-embedding latency before and after the embedding workers, at the same load: the local
// embedder as search ran it before (one queue on the service's thread, 1 intra-op thread: the
// code of commit BEFORE, extracted from git) against today's (a queries worker of 1 thread beside a
// documents worker on every core), in one process, alternating, so the machine's load weighs on
// both alike. Two measures, each per arm:
//  - idle: single short queries one after another, the arms alternating query by query;
//  - during an ingestion: a query scheduled every 25 ms (open loop) while a batch of chunks is
//    embedded as documents, latency counted from the query's scheduled time (a blocked event loop
//    delays the send too), the arms' order swapped every round.
// Bounded; stops by itself.
//
//   node bench/search/query-latency-bench.ts [--queries 400] [--rounds 4] [--chunks 96] [--before <commit>]
//   --smoke: 10 queries, 1 round of 16 chunks (bench/work.ts). Every query and every ingestion
//   must answer one vector per text, of the model's dimensions, on both arms.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, symlinkSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { chunkText, LocalEmbedder, locateModelFiles } from "../../services/search/src/index.ts";
import { expectCount, sized, workChecked } from "../work.ts";
import { chunks, questions } from "./corpus.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return (i >= 0 ? process.argv[i + 1] : undefined) ?? fallback;
};
const QUERIES = Number(arg("queries", sized("400", "10")));
const ROUNDS = Number(arg("rounds", sized("4", "1")));
const CHUNKS = Number(arg("chunks", sized("96", "16")));
// The parent of the commit that moved embedding into worker threads.
const BEFORE = arg("before", "4a610f1^");
const log = (s: string) => process.stdout.write(`${s}\n`);
const load = () => execFileSync("cat", ["/proc/loadavg"], { encoding: "utf8" }).split(" ")[0] as string;
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};
const fmt = (xs: number[]) =>
  `p50 ${pct(xs, 50).toFixed(2)} / p99 ${pct(xs, 99).toFixed(2)} / max ${pct(xs, 100).toFixed(1)} ms (n=${xs.length})`;

interface Arm {
  name: string;
  query(text: string): Promise<unknown>;
  ingest(texts: string[]): Promise<unknown>;
  close(): Promise<void>;
}

// 1. The earlier embedder's sources, from git, in the build cache (beside a node_modules link so
//    onnxruntime-node resolves).
const repo = join(import.meta.dirname, "../..");
const sha = execFileSync("git", ["-C", repo, "rev-parse", "--short", BEFORE], { encoding: "utf8" }).trim();
const dir = join(homedir(), ".cache/capstan/query-latency-bench", sha);
if (!existsSync(join(dir, "services/search/src/embedding/local.ts"))) {
  mkdirSync(dir, { recursive: true });
  const tar = execFileSync("git", ["-C", repo, "archive", sha, "services/search/src/embedding"]);
  execFileSync("tar", ["-x", "-C", dir], { input: tar });
}
// The old code resolves its packages through this checkout's node_modules. The link is made
// again each run: one left by another checkout (a CI clone since deleted) would dangle.
rmSync(join(dir, "node_modules"), { force: true });
symlinkSync(join(repo, "node_modules"), join(dir, "node_modules"));
const old = (await import(join(dir, "services/search/src/embedding/local.ts"))) as {
  LocalEmbedder: { load(o: object): Promise<{ embed(t: string[]): Promise<unknown>; close?(): void }> };
};

const files = locateModelFiles(process.env.CAPSTAN_EMBEDDING_MODEL_DIR);
// The earlier embedder read BERT's vocab.txt (its hand-written WordPiece), which the folder has beside tokenizer.json.
const before = await old.LocalEmbedder.load({
  ...files,
  vocab: join(files.dir, "vocab.txt"),
  threads: 1,
  batchSize: 32,
});
const after = await LocalEmbedder.load({ ...files, batchSize: 32 });
/** The arm's answer must hold `count` vectors of the model's dimensions; counted per arm. */
const answered = new Map<string, number>();
const vectors = (name: string, count: number) => (out: unknown) => {
  const list = out as ArrayLike<ArrayLike<number>>;
  expectCount(`vectors ${name} answered`, list?.length ?? 0, count);
  expectCount(`dimensions of ${name}'s vectors`, list[0]?.length ?? 0, after.dimensions);
  answered.set(name, (answered.get(name) ?? 0) + count);
  return out;
};
const arms: Arm[] = [
  {
    name: `before (${sha}: the service's thread, 1 thread)`,
    query: (t) => before.embed([t]).then(vectors("before", 1)),
    ingest: (ts) => before.embed(ts).then(vectors("before", ts.length)),
    close: async () => before.close?.(),
  },
  {
    name: "after (queries worker, 1 thread; documents worker, every core)",
    query: (t) => after.embed([t]).then(vectors("after", 1)),
    ingest: (ts) => after.embedDocuments(ts).then(vectors("after", ts.length)),
    close: () => after.close(),
  },
];
const texts = chunks(CHUNKS, (t) => chunkText(t, { size: 800, overlap: 100 }));
const qs = questions(QUERIES);
log(`model ${files.onnx}; before = ${sha}; ${QUERIES} queries, ${ROUNDS} rounds of ${texts.length} chunks`);
log(`load average at start ${load()}`);
for (const arm of arms) await arm.ingest(texts.slice(0, 32)); // warm-up

// 2. Idle: the arms alternate query by query (and which goes first, every pair).
const idle = arms.map(() => [] as number[]);
for (let i = 0; i < QUERIES; i++) {
  const order = i % 2 === 0 ? [0, 1] : [1, 0];
  for (const a of order) {
    const t0 = performance.now();
    await (arms[a] as Arm).query(`${qs[i]} (${i})`);
    (idle[a] as number[]).push(performance.now() - t0);
  }
}

// 3. During an ingestion: queries scheduled every 25 ms (open loop: each sent at its time, whether
//    or not the earlier ones were answered) while the chunks are embedded.
async function during(arm: Arm, round: number): Promise<number[]> {
  const out: Promise<number>[] = [];
  let ingesting = true;
  const ingestion = arm.ingest(texts.map((t) => `${t} (${round})`)).finally(() => {
    ingesting = false;
  });
  const start = performance.now();
  for (let i = 0; ingesting; i++) {
    const scheduled = start + i * 25;
    const wait = scheduled - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    out.push(arm.query(`${qs[i % qs.length]} (during ${round}.${i})`).then(() => performance.now() - scheduled));
  }
  await ingestion;
  return Promise.all(out);
}
const busy = arms.map(() => [] as number[]);
for (let r = 0; r < ROUNDS; r++) {
  for (const a of r % 2 === 0 ? [0, 1] : [1, 0]) (busy[a] as number[]).push(...(await during(arms[a] as Arm, r)));
}

for (const [a, arm] of arms.entries()) {
  log(`\n${arm.name}`);
  log(`  idle:   ${fmt(idle[a] as number[])}`);
  log(`  during: ${fmt(busy[a] as number[])}`);
}
log(`\n| arm | idle p50 / p99 ms | during an ingestion p50 / p99 ms |`);
log("|---|---|---|");
for (const [a, arm] of arms.entries()) {
  const i = idle[a] as number[];
  const b = busy[a] as number[];
  log(
    `| ${arm.name} | ${pct(i, 50).toFixed(2)} / ${pct(i, 99).toFixed(2)} | ${pct(b, 50).toFixed(1)} / ${pct(b, 99).toFixed(1)} |`,
  );
}
log(`load average at end ${load()}`);
for (const arm of arms) await arm.close();
workChecked(
  `every query and ingestion answered its vectors (${[...answered].map(([n, c]) => `${n} ${c}`).join(", ")})`,
);
