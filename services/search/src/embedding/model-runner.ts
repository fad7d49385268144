// The model itself, as the embedding worker runs it: a sentence-transformers model folder
// (model-files.ts; all-MiniLM-L6-v2 by default) on onnxruntime-node, tokenized by its
// tokenizer.json (tokenizer.ts), pooled as its Pooling config says (pooling.ts) and
// L2-normalised — what sentence-transformers does with the same folder. Texts are batched by
// token length so each batch pads only to its own longest text, never to an outlier of the whole
// request; the vectors come back in the order of the texts. onnxruntime-node's run() blocks the
// thread it is called on, which is why this runs in a worker (embed-worker.ts), never on the
// service's event loop.
import * as ort from "onnxruntime-node";
import { type ModelConfig, type ModelFiles, readModelConfig } from "./model-files.ts";
import { pool } from "./pooling.ts";
import { normalize } from "./provider.ts";
import { ModelTokenizer } from "./tokenizer.ts";

export interface ModelOptions extends ModelFiles {
  /** Longest input in tokens; default: the folder's max_seq_length (256 for all-MiniLM-L6-v2), else 512. */
  maxTokens?: number;
  batchSize: number;
  /** onnxruntime intra-op threads (the matrix kernels' parallelism). */
  threads: number;
  /**
   * Keep onnxruntime's CPU memory arena (default true): the activations of the largest batch
   * stay allocated for the next run. Off, each run allocates and frees its own: a lane that
   * embeds document batches of 32 × 256 tokens otherwise holds about 160 MB for good after its
   * first batch (bench/memory/idle-rss.ts).
   */
  memArena?: boolean;
}

export interface BatchTiming {
  size: number;
  seconds: number;
}

/**
 * The graph output to read: a ready `sentence_embedding` ([batch, dims], pooled inside the graph),
 * else the per-token `token_embeddings` / `last_hidden_state`, else the first output.
 */
export function pickOutput(names: readonly string[]): { name: string; pooled: boolean } {
  if (names.includes("sentence_embedding")) return { name: "sentence_embedding", pooled: true };
  const name = ["token_embeddings", "last_hidden_state"].find((n) => names.includes(n)) ?? names[0];
  if (!name) throw new Error("model has no output");
  return { name, pooled: false };
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
  private readonly tokenizer: ModelTokenizer;
  private readonly config: ModelConfig;
  private readonly opts: ModelOptions;
  private readonly maxTokens: number;
  private readonly typeIds: boolean;
  private readonly output: { name: string; pooled: boolean };

  private constructor(session: ort.InferenceSession, config: ModelConfig, opts: ModelOptions) {
    this.session = session;
    this.config = config;
    this.tokenizer = new ModelTokenizer(config.tokenizer, config.tokenizerConfig);
    this.opts = opts;
    this.maxTokens = opts.maxTokens ?? config.maxSeqLength ?? 512;
    // token_type_ids only where the graph takes it (BERT does; RoBERTa/XLM-R exports do not).
    this.typeIds = session.inputNames.includes("token_type_ids");
    this.output = pickOutput(session.outputNames);
    const meta = session.outputMetadata.find((m) => m.name === this.output.name);
    const shape = meta && "shape" in meta ? meta.shape : [];
    const width = shape[this.output.pooled ? 1 : 2];
    this.dims = typeof width === "number" ? width : 0;
  }

  get dimensions(): number {
    return this.dims;
  }

  static async load(opts: ModelOptions): Promise<EmbeddingModel> {
    const config = readModelConfig(opts);
    const session = await ort.InferenceSession.create(opts.onnx, {
      intraOpNumThreads: opts.threads,
      interOpNumThreads: 1,
      executionMode: "sequential",
      // "all": constant folding turns the int8 weights' Cast+Mul into float weights once at load,
      // and fuses layer norm, GELU and attention (see docs/benchmarks.md, "Embedding speed").
      graphOptimizationLevel: "all",
      executionProviders: ["cpu"],
      enableCpuMemArena: opts.memArena ?? true,
    });
    for (const name of ["input_ids", "attention_mask"]) {
      if (!session.inputNames.includes(name)) throw new Error(`model ${opts.onnx} has no ${name} input`);
    }
    const model = new EmbeddingModel(session, config, opts);
    // Output width not declared in the file: run once to learn it.
    if (model.dims === 0) model.dims = (await model.embed(["dimension probe"])).vectors[0]?.length ?? 0;
    return model;
  }

  /** One unit vector per text, in order, and the timing of each model run. */
  async embed(texts: string[]): Promise<{ vectors: Float32Array[]; batches: BatchTiming[] }> {
    const encoded = texts.map((t) => {
      // JavaScript's toLowerCase and Python's str.lower() both apply Unicode's full case mapping.
      const ids = this.tokenizer.encode(this.config.lowercase ? t.toLowerCase() : t, this.maxTokens);
      // An empty text, with a tokenizer that adds no special tokens: one padding token to pool.
      return ids.length > 0 ? ids : [this.tokenizer.padId];
    });
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
    const output = (await this.session.run(feeds))[this.output.name] as ort.Tensor;
    const data = output.data as Float32Array;
    if (this.output.pooled) {
      const dims = output.dims[1] as number;
      return rows.map((_, b) => normalize(data.slice(b * dims, (b + 1) * dims)));
    }
    const dims = output.dims[2] as number;
    return rows.map((row, b) => pool(this.config.pooling, data, b * seq * dims, row.length, dims));
  }

  release(): Promise<void> {
    return this.session.release();
  }
}
