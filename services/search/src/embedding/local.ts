// The in-process sentence-embedding model (a sentence-transformers folder exported to ONNX,
// all-MiniLM-L6-v2 by default, on onnxruntime-node), run in
// two worker threads so the service's event loop never blocks on a model run:
//  - the documents lane embeds ingestion (CAPSTAN_EMBEDDING_THREADS intra-op threads, default
//    every core), texts batched by token length. Ingestion is occasional, and a loaded session is
//    about 120 MB (the model's weights as floats): this lane starts with the first documents and
//    closes after CAPSTAN_EMBEDDING_DOCUMENTS_IDLE_S without any (loading again takes ~0.2 s);
//  - the queries lane embeds search queries on its own session (1 thread by default), so a query
//    never waits behind a document batch that takes seconds.
// Each lane is a WorkerLane (worker-lane.ts); the model code is model-runner.ts.
import { availableParallelism } from "node:os";
import { type ModelFiles, readModelConfig } from "./model-files.ts";
import type { ModelOptions } from "./model-runner.ts";
import type { Embedder } from "./provider.ts";
import { WorkerLane } from "./worker-lane.ts";

export interface LocalEmbedderOptions extends ModelFiles {
  modelName?: string;
  /** Longest input in tokens; default: the folder's max_seq_length (256 for all-MiniLM-L6-v2). */
  maxTokens?: number;
  batchSize?: number;
  /** Intra-op threads of the documents lane; default: every core. */
  threads?: number;
  /** Intra-op threads of the queries lane; default 1 (a short query gains little from more). */
  queryThreads?: number;
  /** The documents lane's worker closes after this long without documents; default 10 s. */
  documentsIdleMs?: number;
  onBatch?: (size: number, seconds: number) => void;
}

// The workers' script: beside this module in the sources, beside the bundle's modules in an image
// (scripts/images/bundle.mjs writes it as embed-worker.mjs next to the process's main.mjs).
const WORKER = new URL(import.meta.url.endsWith(".ts") ? "./embed-worker.ts" : "./embed-worker.mjs", import.meta.url);

export class LocalEmbedder implements Embedder {
  readonly name: string;
  readonly dimensions: number;
  /** The queries worker's thread id: embedding never runs on the caller's thread. */
  readonly queriesThreadId: number;
  private readonly queries: WorkerLane;
  /** Started by the first documents, closed when idle (see the file's comment). */
  readonly documents: WorkerLane;

  private constructor(
    name: string,
    lanes: { queries: WorkerLane; documents: WorkerLane },
    info: { dimensions: number; queriesThreadId: number },
  ) {
    this.name = name;
    this.queries = lanes.queries;
    this.documents = lanes.documents;
    this.dimensions = info.dimensions;
    this.queriesThreadId = info.queriesThreadId;
  }

  static async load(opts: LocalEmbedderOptions): Promise<LocalEmbedder> {
    // A missing or malformed file of the folder: a ModelFilesError naming it, thrown here rather
    // than from inside the workers (which read the folder again, each for itself).
    readModelConfig(opts);
    const model: ModelOptions = {
      onnx: opts.onnx,
      dir: opts.dir,
      tokenizerJson: opts.tokenizerJson,
      ...(opts.maxTokens ? { maxTokens: opts.maxTokens } : {}),
      batchSize: opts.batchSize ?? 32,
      threads: opts.threads ?? availableParallelism(),
    };
    const lane = (name: string, workerData: ModelOptions, idleCloseMs?: number) =>
      new WorkerLane({
        script: WORKER,
        workerData,
        name,
        mergeLimit: model.batchSize,
        ...(idleCloseMs !== undefined ? { idleCloseMs } : {}),
        ...(opts.onBatch ? { onBatch: opts.onBatch } : {}),
      });
    const queries = lane("queries", { ...model, threads: opts.queryThreads ?? 1 });
    // Document batches are large and rare: their activations are freed after each run (no arena).
    // Queries are small and constant: the arena's reuse keeps their latency.
    const documents = lane("documents", { ...model, memArena: false }, opts.documentsIdleMs ?? 10_000);
    try {
      const q = await queries.start();
      return new LocalEmbedder(
        `local:${opts.modelName ?? "all-MiniLM-L6-v2"}`,
        { queries, documents },
        { dimensions: q.dimensions, queriesThreadId: q.threadId },
      );
    } catch (err) {
      await queries.close();
      throw err;
    }
  }

  /** Search queries: the queries lane, concurrent callers merged into one model run. */
  embed(texts: string[]): Promise<Float32Array[]> {
    return this.queries.run(texts);
  }

  /** Documents (ingestion): the documents lane, batched by token length. */
  embedDocuments(texts: string[]): Promise<Float32Array[]> {
    return this.documents.run(texts);
  }

  async close(): Promise<void> {
    await Promise.all([this.queries.close(), this.documents.close()]);
  }
}
