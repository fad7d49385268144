// One embedding worker thread and its queue, seen from the service's thread. Jobs run one at a
// time in arrival order; small jobs that queue up meanwhile (concurrent search queries) are
// merged into one model run of at most mergeLimit texts. A worker that dies or throws fails only
// the job it was running — rejected with an Error that search and ingestion answer as
// SEARCH_ERR_EMBEDDING — and the next job starts a fresh worker, so a crash is never a hang. A job
// is never retried, so a worker that fails every time fails every job, each once. With
// idleCloseMs, a worker left without work that long is closed (its model and the memory it holds
// given back) and the next job starts a new one.
import { Worker } from "node:worker_threads";
import type { BatchTiming } from "./model-runner.ts";

/** How long close() lets a worker finish its run before terminating it. */
const CLOSE_GRACE_MS = 30_000;

export interface WorkerLaneOptions {
  /** Module the worker runs (embed-worker.ts; tests give a small stand-in speaking the protocol). */
  script: URL;
  workerData: unknown;
  /** Queued jobs are merged into one run while their texts total at most this. */
  mergeLimit: number;
  /** Names the lane in errors ("queries", "documents"). */
  name: string;
  onBatch?: (size: number, seconds: number) => void;
  /** Close the worker after this long without a job (absent: it stays until close()). */
  idleCloseMs?: number;
}

export interface LaneInfo {
  dimensions: number;
  threadId: number;
}

interface Job {
  texts: string[];
  resolve: (v: Float32Array[]) => void;
  reject: (e: unknown) => void;
}

type Reply =
  | { type: "ready"; dimensions: number; threadId: number }
  | { type: "failed"; message: string }
  | { type: "done"; id: number; data: Float32Array; dims: number; batches: BatchTiming[] }
  | { type: "error"; id: number; message: string };

export class WorkerLane {
  private readonly opts: WorkerLaneOptions;
  private worker: Worker | undefined;
  private starting: Promise<LaneInfo> | undefined;
  private readonly queue: Job[] = [];
  private inFlight: { id: number; jobs: Job[] } | undefined;
  private nextId = 1;
  private closed = false;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Workers started so far (1 unless one died, or was closed when idle, and was replaced). */
  starts = 0;

  constructor(opts: WorkerLaneOptions) {
    this.opts = opts;
  }

  /** Starts the worker (if none is running) and resolves once its model is loaded. */
  start(): Promise<LaneInfo> {
    this.starting ??= this.spawn().catch((err) => {
      this.starting = undefined;
      throw err;
    });
    return this.starting;
  }

  run(texts: string[]): Promise<Float32Array[]> {
    if (this.closed) return Promise.reject(new Error(`embedding lane ${this.opts.name} closed`));
    if (texts.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.queue.push({ texts, resolve, reject });
      this.pump();
    });
  }

  /** True while a worker is running or starting. */
  get running(): boolean {
    return this.starting !== undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    const err = new Error(`embedding lane ${this.opts.name} closed`);
    for (const job of this.queue.splice(0)) job.reject(err);
    this.fail(err);
    await this.retire();
  }

  /** Ends the worker (if any), letting it finish its run and release the model. */
  private async retire(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.starting = undefined;
    if (!w) return;
    // Ask the worker to finish its run and release the model (see embed-worker.ts); terminate()
    // only if it has not ended after the grace period.
    const exited = new Promise<void>((resolve) => w.once("exit", () => resolve()));
    w.postMessage({ type: "close" });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), CLOSE_GRACE_MS);
    });
    if ((await Promise.race([exited, late])) === "late") await w.terminate();
    clearTimeout(timer);
  }

  private async spawn(): Promise<LaneInfo> {
    this.starts++;
    const worker = new Worker(this.opts.script, { workerData: this.opts.workerData });
    this.worker = worker;
    return new Promise<LaneInfo>((resolve, reject) => {
      let ready = false;
      const died = (reason: string) => {
        if (this.worker !== worker) return; // an old worker's last words
        this.worker = undefined;
        this.starting = undefined;
        const err = new Error(`embedding worker (${this.opts.name}) ${reason}`);
        if (!ready) reject(err);
        this.fail(err);
        this.pump();
      };
      worker.on("message", (msg: Reply) => {
        if (msg.type === "ready") {
          ready = true;
          if (!this.inFlight) worker.unref(); // an idle worker does not keep the process alive
          resolve({ dimensions: msg.dimensions, threadId: msg.threadId });
        } else if (msg.type === "failed") {
          died(`could not load the model: ${msg.message}`);
        } else {
          this.settle(msg);
        }
      });
      worker.on("error", (err) => died(`failed: ${err.message}`));
      worker.on("exit", (code) => died(`exited with code ${code}`));
    });
  }

  /** Rejects the jobs of the run in flight (its worker is gone or the lane closed). */
  private fail(err: Error): void {
    const running = this.inFlight;
    this.inFlight = undefined;
    for (const job of running?.jobs ?? []) job.reject(err);
  }

  private settle(msg: Extract<Reply, { type: "done" | "error" }>): void {
    const running = this.inFlight;
    if (!running || running.id !== msg.id) return;
    this.inFlight = undefined;
    if (msg.type === "error") {
      const err = new Error(`embedding failed: ${msg.message}`);
      for (const job of running.jobs) job.reject(err);
    } else {
      for (const b of msg.batches) this.opts.onBatch?.(b.size, b.seconds);
      let row = 0;
      for (const job of running.jobs) {
        job.resolve(job.texts.map(() => msg.data.subarray(row * msg.dims, ++row * msg.dims)));
      }
    }
    if (this.queue.length === 0) {
      this.worker?.unref();
      this.closeWhenIdle();
    }
    this.pump();
  }

  /** After idleCloseMs without a job, the worker is retired (the next job starts a new one). */
  private closeWhenIdle(): void {
    const ms = this.opts.idleCloseMs;
    if (ms === undefined) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (!this.inFlight && this.queue.length === 0 && !this.closed) void this.retire();
    }, ms);
    this.idleTimer.unref();
  }

  private pump(): void {
    if (this.inFlight || this.queue.length === 0 || this.closed) return;
    const jobs: Job[] = [this.queue.shift() as Job];
    let n = jobs[0]?.texts.length ?? 0;
    while (this.queue.length > 0 && n + (this.queue[0]?.texts.length ?? 0) <= this.opts.mergeLimit) {
      const job = this.queue.shift() as Job;
      n += job.texts.length;
      jobs.push(job);
    }
    clearTimeout(this.idleTimer);
    const id = this.nextId++;
    this.inFlight = { id, jobs };
    this.start().then(
      () => {
        if (this.inFlight?.id !== id) return;
        this.worker?.ref(); // a job in flight keeps the process alive until it settles
        this.worker?.postMessage({ type: "embed", id, texts: jobs.flatMap((j) => j.texts) });
      },
      (err: Error) => {
        // The worker could not start: this run's jobs fail with the reason (died() may have done it).
        if (this.inFlight?.id !== id) return;
        this.fail(err);
        this.pump();
      },
    );
  }
}
