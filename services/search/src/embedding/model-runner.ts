// The model itself, as the embedding worker runs it: all-MiniLM-L6-v2 (ONNX) on onnxruntime-node,
// BERT WordPiece tokenization, mean pooling over the attention mask, L2 normalisation — what
// sentence-transformers does for this model. Texts are batched by token length so each batch
// pads only to its own longest text, never to an outlier of the whole request; the vectors come
// back in the order of the texts. onnxruntime-node's run() blocks the thread it is called on,
// which is why this runs in a worker (embed-worker.ts), never on the service's event loop.
import { readFileSync } from "node:fs";
import * as ort from "onnxruntime-node";
import { normalize } from "./provider.ts";
import { WordPieceTokenizer } from "./wordpiece.ts";

export interface ModelOptions {
  onnx: string;
  vocab: string;
  /** all-MiniLM-L6-v2 was trained on at most 256 word pieces. */
  maxTokens: number;
  batchSize: number;
  /** onnxruntime intra-op threads (the matrix kernels' parallelism). */
  threads: number;
}

export interface BatchTiming {
  size: number;
  seconds: number;
}

/** Groups text indices into batches of at most batchSize, each of similar token lengths. */
export function lengthBatches(lengths: number[], batchSize: number): number[][] {
  const order = lengths.map((_, i) => i).sort((a, b) => (lengths[a] as number) - (lengths[b] as number) || a - b);
  const out: number[][] = [];
  for (let s = 0; s < order.length; s += batchSize) out.push(order.slice(s, s + batchSize));
  return out;
}

export class EmbeddingModel {
  private dims: number;
  private readonly session: ort.InferenceSession;
  private readonly tokenizer: WordPieceTokenizer;
  private readonly opts: ModelOptions;
  private readonly typeIds: boolean;

  private constructor(session: ort.InferenceSession, tokenizer: WordPieceTokenizer, opts: ModelOptions) {
    this.session = session;
    this.tokenizer = tokenizer;
    this.opts = opts;
    this.typeIds = session.inputNames.includes("token_type_ids");
    const out = session.outputMetadata[0];
    const shape = out && "shape" in out ? out.shape : [];
    this.dims = typeof shape[2] === "number" ? shape[2] : 0;
  }

  get dimensions(): number {
    return this.dims;
  }

  static async load(opts: ModelOptions): Promise<EmbeddingModel> {
    const tokenizer = new WordPieceTokenizer(readFileSync(opts.vocab, "utf8"));
    const session = await ort.InferenceSession.create(opts.onnx, {
      intraOpNumThreads: opts.threads,
      interOpNumThreads: 1,
      executionMode: "sequential",
      // "all": constant folding turns the int8 weights' Cast+Mul into float weights once at load,
      // and fuses layer norm, GELU and attention (see docs/benchmarks.md, "Embedding speed").
      graphOptimizationLevel: "all",
      executionProviders: ["cpu"],
    });
    for (const name of ["input_ids", "attention_mask"]) {
      if (!session.inputNames.includes(name)) throw new Error(`model ${opts.onnx} has no ${name} input`);
    }
    const model = new EmbeddingModel(session, tokenizer, opts);
    // Output width not declared in the file: run once to learn it.
    if (model.dims === 0) model.dims = (await model.embed(["dimension probe"])).vectors[0]?.length ?? 0;
    return model;
  }

  /** One unit vector per text, in order, and the timing of each model run. */
  async embed(texts: string[]): Promise<{ vectors: Float32Array[]; batches: BatchTiming[] }> {
    const encoded = texts.map((t) => this.tokenizer.encode(t, this.opts.maxTokens).ids);
    const vectors = new Array<Float32Array>(texts.length);
    const batches: BatchTiming[] = [];
    for (const idx of lengthBatches(
      encoded.map((ids) => ids.length),
      this.opts.batchSize,
    )) {
      const started = performance.now();
      const out = await this.run(idx.map((i) => encoded[i] as number[]));
      idx.forEach((i, k) => {
        vectors[i] = out[k] as Float32Array;
      });
      batches.push({ size: idx.length, seconds: (performance.now() - started) / 1000 });
    }
    return { vectors, batches };
  }

  private async run(rows: number[][]): Promise<Float32Array[]> {
    const batch = rows.length;
    const seq = Math.max(...rows.map((ids) => ids.length));
    const ids = new BigInt64Array(batch * seq).fill(BigInt(this.tokenizer.padId));
    const mask = new BigInt64Array(batch * seq);
    rows.forEach((row, b) => {
      for (let j = 0; j < row.length; j++) {
        ids[b * seq + j] = BigInt(row[j] as number);
        mask[b * seq + j] = 1n;
      }
    });
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor("int64", ids, [batch, seq]),
      attention_mask: new ort.Tensor("int64", mask, [batch, seq]),
    };
    if (this.typeIds) feeds.token_type_ids = new ort.Tensor("int64", new BigInt64Array(batch * seq), [batch, seq]);
    const output = await this.session.run(feeds);
    const hidden = output[this.session.outputNames[0] as string] as ort.Tensor;
    const data = hidden.data as Float32Array;
    const dims = hidden.dims[2] as number;
    return rows.map((row, b) => {
      // Mean over the real tokens only (the attention mask), as sentence-transformers pools.
      const v = new Float32Array(dims);
      for (let j = 0; j < row.length; j++) {
        const base = (b * seq + j) * dims;
        for (let d = 0; d < dims; d++) v[d] = (v[d] as number) + (data[base + d] as number);
      }
      for (let d = 0; d < dims; d++) v[d] = (v[d] as number) / row.length;
      return normalize(v);
    });
  }

  release(): Promise<void> {
    return this.session.release();
  }
}
