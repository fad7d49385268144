// The in-process sentence-embedding model: all-MiniLM-L6-v2 (ONNX) on onnxruntime-node, BERT
// WordPiece tokenization, mean pooling over the attention mask, L2 normalisation — what
// sentence-transformers does for this model. Concurrent callers are micro-batched: one model
// run at a time, each run taking whatever is queued (up to batchSize texts).
import { readFileSync } from "node:fs";
import * as ort from "onnxruntime-node";
import { type Embedder, normalize } from "./provider.ts";
import { WordPieceTokenizer } from "./wordpiece.ts";

export interface LocalEmbedderOptions {
  onnx: string;
  vocab: string;
  modelName?: string;
  /** all-MiniLM-L6-v2 was trained on at most 256 word pieces. */
  maxTokens?: number;
  batchSize?: number;
  threads?: number;
  onBatch?: (size: number, seconds: number) => void;
}

interface Job {
  texts: string[];
  resolve: (v: Float32Array[]) => void;
  reject: (e: unknown) => void;
}

export class LocalEmbedder implements Embedder {
  readonly name: string;
  readonly dimensions: number;
  private readonly session: ort.InferenceSession;
  private readonly tokenizer: WordPieceTokenizer;
  private readonly maxTokens: number;
  private readonly batchSize: number;
  private readonly onBatch: LocalEmbedderOptions["onBatch"];
  private readonly queue: Job[] = [];
  private running = false;
  private closed = false;

  private constructor(
    session: ort.InferenceSession,
    tokenizer: WordPieceTokenizer,
    dimensions: number,
    opts: LocalEmbedderOptions,
  ) {
    this.session = session;
    this.tokenizer = tokenizer;
    this.dimensions = dimensions;
    this.name = `local:${opts.modelName ?? "all-MiniLM-L6-v2"}`;
    this.maxTokens = opts.maxTokens ?? 256;
    this.batchSize = opts.batchSize ?? 32;
    this.onBatch = opts.onBatch;
  }

  static async load(opts: LocalEmbedderOptions): Promise<LocalEmbedder> {
    const tokenizer = new WordPieceTokenizer(readFileSync(opts.vocab, "utf8"));
    const threads = opts.threads ?? 1;
    const session = await ort.InferenceSession.create(opts.onnx, {
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      graphOptimizationLevel: "all",
      executionProviders: ["cpu"],
    });
    for (const name of ["input_ids", "attention_mask"]) {
      if (!session.inputNames.includes(name)) throw new Error(`model ${opts.onnx} has no ${name} input`);
    }
    const probe = new LocalEmbedder(session, tokenizer, 0, opts);
    const [v] = await probe.run(["dimension probe"]);
    return new LocalEmbedder(session, tokenizer, v?.length ?? 0, opts);
  }

  embed(texts: string[]): Promise<Float32Array[]> {
    if (this.closed) return Promise.reject(new Error("embedder closed"));
    if (texts.length === 0) return Promise.resolve([]);
    // Long requests (documents) go in length-sorted slices so a batch pads little.
    const order = texts.map((t, i) => ({ t, i })).sort((a, b) => a.t.length - b.t.length);
    const slices: { idx: number[]; p: Promise<Float32Array[]> }[] = [];
    for (let s = 0; s < order.length; s += this.batchSize) {
      const part = order.slice(s, s + this.batchSize);
      slices.push({ idx: part.map((p) => p.i), p: this.enqueue(part.map((p) => p.t)) });
    }
    return Promise.all(slices.map((s) => s.p)).then((results) => {
      const out = new Array<Float32Array>(texts.length);
      results.forEach((vectors, k) => {
        const idx = slices[k]?.idx ?? [];
        vectors.forEach((v, j) => {
          out[idx[j] as number] = v;
        });
      });
      return out;
    });
  }

  private enqueue(texts: string[]): Promise<Float32Array[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ texts, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const jobs: Job[] = [this.queue.shift() as Job];
        let n = jobs[0]?.texts.length ?? 0;
        while (this.queue.length > 0 && n + (this.queue[0]?.texts.length ?? 0) <= this.batchSize) {
          const job = this.queue.shift() as Job;
          n += job.texts.length;
          jobs.push(job);
        }
        try {
          const vectors = await this.run(jobs.flatMap((j) => j.texts));
          let offset = 0;
          for (const job of jobs) {
            job.resolve(vectors.slice(offset, offset + job.texts.length));
            offset += job.texts.length;
          }
        } catch (err) {
          for (const job of jobs) job.reject(err);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private async run(texts: string[]): Promise<Float32Array[]> {
    const started = performance.now();
    const encoded = texts.map((t) => this.tokenizer.encode(t, this.maxTokens).ids);
    const batch = encoded.length;
    const seq = Math.max(...encoded.map((ids) => ids.length));
    const ids = new BigInt64Array(batch * seq);
    const mask = new BigInt64Array(batch * seq);
    encoded.forEach((row, b) => {
      for (let j = 0; j < seq; j++) {
        ids[b * seq + j] = BigInt(j < row.length ? (row[j] as number) : this.tokenizer.padId);
        mask[b * seq + j] = j < row.length ? 1n : 0n;
      }
    });
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor("int64", ids, [batch, seq]),
      attention_mask: new ort.Tensor("int64", mask, [batch, seq]),
    };
    if (this.session.inputNames.includes("token_type_ids")) {
      feeds.token_type_ids = new ort.Tensor("int64", new BigInt64Array(batch * seq), [batch, seq]);
    }
    const output = await this.session.run(feeds);
    const hidden = output[this.session.outputNames[0] as string] as ort.Tensor;
    const data = hidden.data as Float32Array;
    const dims = hidden.dims[2] as number;
    const vectors: Float32Array[] = [];
    for (let b = 0; b < batch; b++) {
      const v = new Float32Array(dims);
      const len = encoded[b]?.length ?? 0;
      for (let j = 0; j < len; j++) {
        const base = (b * seq + j) * dims;
        for (let d = 0; d < dims; d++) v[d] = (v[d] as number) + (data[base + d] as number);
      }
      for (let d = 0; d < dims; d++) v[d] = (v[d] as number) / len;
      vectors.push(normalize(v));
    }
    this.onBatch?.(batch, (performance.now() - started) / 1000);
    return vectors;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.session.release();
  }
}
