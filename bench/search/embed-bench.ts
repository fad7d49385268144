// Embedding benchmark: Capstan's local embedder side by side with onnxruntime's own Python
// runtime (PyPI onnxruntime + tokenizers, bench/search/embed_bench.py) on the same model file,
// the same chunks and the same thread count, the two arms alternating in one run so the load of
// the machine weighs on both alike. Reports chunks/s of each arm and their ratio, single-query
// latency of each, the largest difference between their vectors, and, for Capstan alone, query
// latency and event-loop delay while a document batch is being embedded. Bounded; stops by itself.
//
//   node bench/search/embed-bench.ts [--threads 1,2] [--chunks 64] [--rounds 20] [--queries 100]
//
// The ratio is the median over rounds of (Python chunks/s) / (Capstan chunks/s), each round
// timing both arms back to back (their order swapped every round): a load that drifts during the
// run shifts both arms of a round alike; short rounds (64 chunks, two batches) keep the two
// arms of a pair seconds apart on a machine whose load swings.
//
// --smoke: 1 thread, 8 chunks, 1 round, 5 queries (bench/work.ts). Every round must embed every
// chunk on both arms, and the two arms' vectors must agree (largest difference below 1e-3).
//
// The Python arm runs in a venv the script creates under ~/.cache/capstan/embed-bench/ with
// pinned versions (PyPI must be reachable the first time).
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { chunkText, LocalEmbedder, locateModelFiles } from "../../services/search/src/index.ts";
import { expectCount, expectWork, sized, workChecked } from "../work.ts";
import { chunks, questions } from "./corpus.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return (i >= 0 ? process.argv[i + 1] : undefined) ?? fallback;
};
const THREADS = arg("threads", sized("1,2", "1")).split(",").map(Number);
const N = Number(arg("chunks", sized("64", "8")));
const ROUNDS = Number(arg("rounds", sized("20", "1")));
const QUERIES = Number(arg("queries", sized("100", "5")));
const BATCH = 32;
const PINS = ["onnxruntime==1.30.0", "tokenizers==0.23.3", "numpy==2.3.5"];
const log = (s: string) => process.stdout.write(`${s}\n`);
const load = () => execFileSync("cat", ["/proc/loadavg"], { encoding: "utf8" }).split(" ")[0] as string;
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};
const median = (xs: number[]) => pct(xs, 50);

// 1. The Python arm's venv, created once with pinned versions.
const venv = join(homedir(), ".cache/capstan/embed-bench", `venv-${PINS.map((p) => p.replace("==", "")).join("-")}`);
const python = join(venv, "bin/python");
if (!existsSync(python)) {
  log(`creating ${venv} (${PINS.join(", ")})`);
  mkdirSync(venv, { recursive: true });
  execFileSync("python3", ["-m", "venv", venv], { stdio: "inherit" });
  execFileSync(python, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", ...PINS], {
    stdio: "inherit",
  });
}

// 2. The corpus: ingestion-like chunks of varied length, and short questions; one file for both arms.
const files = locateModelFiles(process.env.CAPSTAN_EMBEDDING_MODEL_DIR);
const texts = chunks(N, (t) => chunkText(t, { size: 800, overlap: 100 }));
const queries = questions(QUERIES);
const corpusFile = join(tmpdir(), `capstan-embed-bench-${process.pid}.json`);
writeFileSync(corpusFile, JSON.stringify({ texts, queries }));
const meanChars = texts.reduce((s, t) => s + t.length, 0) / texts.length;
log(`model ${files.onnx}`);
log(`${texts.length} chunks (mean ${meanChars.toFixed(0)} chars), ${queries.length} queries, batch ${BATCH}`);

interface PyArm {
  ask(cmd: string): Promise<Record<string, unknown>>;
  quit(): void;
}

function startPython(threads: number): Promise<PyArm> {
  const script = join(import.meta.dirname, "embed_bench.py");
  const args = [script, "--model", files.onnx, "--tokenizer", files.tokenizerJson as string];
  args.push("--corpus", corpusFile, "--threads", String(threads), "--batch", String(BATCH));
  // tokenizers parallelises encode_batch with rayon: hold it to the same thread count.
  const child = spawn(python, args, {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, RAYON_NUM_THREADS: String(threads) },
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => JSON.parse(((await lines.next()).value as string) ?? "{}") as Record<string, unknown>;
  return next().then(() => ({
    async ask(cmd: string) {
      child.stdin.write(`${cmd}\n`);
      return next();
    },
    quit() {
      child.stdin.end("quit\n");
    },
  }));
}

type Embed = (xs: string[]) => Promise<Float32Array[]>;
/** The documents path when the embedder has one (ingestion), else embed(). */
function documentsPath(e: LocalEmbedder): Embed {
  const d = (e as unknown as { embedDocuments?: Embed }).embedDocuments;
  return d ? d.bind(e) : e.embed.bind(e);
}

const summary: string[] = [];
for (const threads of THREADS) {
  log(`\n== ${threads} thread(s), load average ${load()} at start`);
  const embedder = await LocalEmbedder.load({ ...files, threads, batchSize: BATCH });
  const py = await startPython(threads);
  const embedDocs = documentsPath(embedder);
  await embedDocs(texts.slice(0, 64)); // warm-up both
  await py.ask("corpus");

  // Throughput: the whole corpus per round, the arms alternating (and their order too).
  const capstan: number[] = [];
  const ref: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const runCapstan = async () => {
      const t0 = performance.now();
      const out = await embedDocs(texts);
      capstan.push(texts.length / ((performance.now() - t0) / 1000));
      expectCount(`chunks Capstan embedded in round ${r + 1}`, out.length, texts.length);
    };
    const runPy = async () => {
      const { seconds, count } = (await py.ask("corpus")) as { seconds: number; count: number };
      ref.push(texts.length / seconds);
      expectCount(`chunks Python embedded in round ${r + 1}`, count, texts.length);
    };
    if (r % 2 === 0) await runCapstan().then(runPy);
    else await runPy().then(runCapstan);
    log(
      `round ${r + 1}: capstan ${capstan.at(-1)?.toFixed(1)} chunks/s, python ${ref.at(-1)?.toFixed(1)} (load ${load()})`,
    );
  }
  const ratio = median(ref.map((p, i) => p / (capstan[i] as number)));
  const total = (xs: number[]) => (xs.length * texts.length) / xs.reduce((s, x) => s + texts.length / x, 0);
  log(
    `throughput: capstan ${median(capstan).toFixed(1)}, python ${median(ref).toFixed(1)} chunks/s; python/capstan ${ratio.toFixed(3)} (median of the rounds' ratios; ${(total(ref) / total(capstan)).toFixed(3)} over the whole run)`,
  );

  // Single short queries, alternating.
  const qc: number[] = [];
  const qp: number[] = [];
  for (let i = 0; i < queries.length; i++) {
    const t0 = performance.now();
    await embedder.embed([queries[i] as string]);
    qc.push(performance.now() - t0);
    qp.push(((await py.ask(`query ${i}`)) as { seconds: number }).seconds * 1000);
  }
  log(
    `query: capstan p50 ${pct(qc, 50).toFixed(2)} ms p99 ${pct(qc, 99).toFixed(2)} ms; python p50 ${pct(qp, 50).toFixed(2)} ms p99 ${pct(qp, 99).toFixed(2)} ms`,
  );

  // Same numbers: the vectors of both arms on the first 64 chunks.
  const mine = await embedDocs(texts.slice(0, 64));
  const theirs = ((await py.ask("vectors 64")) as { vectors: number[][] }).vectors;
  let maxDiff = 0;
  mine.forEach((v, i) => {
    v.forEach((x, d) => {
      maxDiff = Math.max(maxDiff, Math.abs(x - (theirs[i]?.[d] as number)));
    });
  });
  log(`vectors: largest difference to the Python runtime ${maxDiff.toExponential(2)} (64 chunks x ${mine[0]?.length})`);
  expectCount("vectors from the Python runtime to compare", theirs.length, mine.length);
  expectWork(maxDiff < 1e-3, `Capstan's vectors equal the Python runtime's (largest difference ${maxDiff})`);
  py.quit();

  // Queries during an ingestion: a query every 25 ms while the corpus is embedded as documents,
  // and the event loop's delay meanwhile (an in-thread model run blocks it for a whole batch).
  const h = monitorEventLoopDelay({ resolution: 5 });
  const during: number[] = [];
  h.enable();
  let ingesting = true;
  const ingestion = embedDocs(texts).finally(() => {
    ingesting = false;
  });
  for (let i = 0; ingesting; i++) {
    await new Promise((r) => setTimeout(r, 25));
    const t0 = performance.now();
    await embedder.embed([`${queries[i % queries.length]} (during ${i})`]);
    during.push(performance.now() - t0);
  }
  await ingestion;
  h.disable();
  log(
    `during ingestion: query p50 ${pct(during, 50).toFixed(2)} ms p99 ${pct(during, 99).toFixed(2)} ms (${during.length} queries); ` +
      `event-loop delay p99 ${(h.percentile(99) / 1e6).toFixed(1)} ms max ${(h.max / 1e6).toFixed(1)} ms`,
  );
  await embedder.close();
  summary.push(
    `| ${threads} | ${median(capstan).toFixed(1)} | ${median(ref).toFixed(1)} | ${ratio.toFixed(3)} | ` +
      `${pct(qc, 50).toFixed(1)} / ${pct(qc, 99).toFixed(1)} | ${pct(qp, 50).toFixed(1)} / ${pct(qp, 99).toFixed(1)} | ` +
      `${pct(during, 50).toFixed(1)} / ${pct(during, 99).toFixed(1)} | ${(h.max / 1e6).toFixed(0)} | ${maxDiff.toExponential(1)} |`,
  );
}

log(
  "\n| threads | capstan chunks/s | python chunks/s | python/capstan | capstan query p50/p99 ms | python query p50/p99 ms | query during ingestion p50/p99 ms | event-loop delay max ms | max vector diff |",
);
log("|---|---|---|---|---|---|---|---|---|");
for (const row of summary) log(row);
log(`load average at end ${load()}`);
workChecked(
  `${THREADS.length} thread setting(s): every round embedded ${texts.length} chunks on both arms, the same vectors`,
);
