// Tokenization throughput: the model folder's tokenizer.json through @huggingface/tokenizers
// (embedding/tokenizer.ts, what the embedder uses) beside HuggingFace tokenizers' own Python
// runtime (Rust, one thread) on the same file and the same chunks, with the same truncation.
// Also checks that both give the same ids on every chunk. Bounded; stops by itself.
//
//   node bench/search/tokenize-bench.ts [--chunks 256] [--rounds 9]
//   (CAPSTAN_EMBEDDING_MODEL_DIR: another model folder; default all-MiniLM-L6-v2 from PyPI)
//   --smoke: 16 chunks, 1 round (bench/work.ts). Stops when any chunk's ids differ from Python's.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { locateModelFiles, readModelConfig } from "../../services/search/src/embedding/model-files.ts";
import { ModelTokenizer } from "../../services/search/src/embedding/tokenizer.ts";
import { chunkText } from "../../services/search/src/index.ts";
import { expectCount, sized, workChecked } from "../work.ts";
import { chunks } from "./corpus.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return (i >= 0 ? process.argv[i + 1] : undefined) ?? fallback;
};
const N = Number(arg("chunks", sized("256", "16")));
const ROUNDS = Number(arg("rounds", sized("9", "1")));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

const files = locateModelFiles(process.env.CAPSTAN_EMBEDDING_MODEL_DIR);
const config = readModelConfig(files);
const maxTokens = config.maxSeqLength ?? 512;
const texts = chunks(N, (t) => chunkText(t, { size: 800, overlap: 100 }));
const corpus = join(tmpdir(), `capstan-tokenize-bench-${process.pid}.json`);
writeFileSync(corpus, JSON.stringify(texts));

// The Python arm: the same file, truncation at the same length, one thread; prints JSON.
const PY = `
import json, sys, time
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1]); tok.enable_truncation(max_length=int(sys.argv[2])); tok.no_padding()
texts = json.load(open(sys.argv[3])); ms = []
for _ in range(int(sys.argv[4])):
    t0 = time.perf_counter(); out = tok.encode_batch(texts); ms.append((time.perf_counter() - t0) * 1000)
print(json.dumps({"ms": ms, "ids": [e.ids for e in out]}))`;
const py = JSON.parse(
  execFileSync(
    process.env.PYTHON ?? "python3",
    ["-c", PY, files.tokenizerJson, String(maxTokens), corpus, String(ROUNDS)],
    {
      encoding: "utf8",
      env: { ...process.env, RAYON_NUM_THREADS: "1", TOKENIZERS_PARALLELISM: "false" },
      maxBuffer: 256 << 20,
    },
  ),
) as { ms: number[]; ids: number[][] };
expectCount("chunks Python's tokenizers encoded", py.ids.length, texts.length);

const hf = new ModelTokenizer(config.tokenizer, config.tokenizerConfig);
// The hand-written BERT WordPiece tokenizer this replaced was a second arm in the commit that
// added this file (`git log --diff-filter=A -- bench/search/tokenize-bench.ts`); figures in
// bench/search/RESULTS.md, "Tokenization".
const arms: [string, (t: string) => number[]][] = [["@huggingface/tokenizers", (t) => hf.encode(t, maxTokens)]];

const pieces = py.ids.reduce((s, ids) => s + ids.length, 0);
console.log(`model folder ${files.dir}: ${texts.length} chunks, ${pieces} tokens, max ${maxTokens}`);
console.log(`load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
console.log(`python tokenizers (encode_batch, 1 thread): median ${median(py.ms).toFixed(1)} ms`);
for (const [name, encode] of arms) {
  const ms: number[] = [];
  let ids: number[][] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    ids = texts.map(encode);
    ms.push(performance.now() - t0);
  }
  const differ = ids.filter((row, i) => JSON.stringify(row) !== JSON.stringify(py.ids[i])).length;
  const perSec = (texts.length / median(ms)) * 1000;
  console.log(
    `${name}: median ${median(ms).toFixed(1)} ms (${perSec.toFixed(0)} chunks/s, first round ${ms[0]?.toFixed(1)} ms); ` +
      `ids differing from Python: ${differ}/${texts.length}`,
  );
  expectCount(`chunks ${name} encoded`, ids.filter((row) => row.length > 0).length, texts.length);
  expectCount(`chunks whose ${name} ids differ from Python's`, differ, 0);
}
workChecked(`${texts.length} chunks tokenized by both arms, the same ids`);
