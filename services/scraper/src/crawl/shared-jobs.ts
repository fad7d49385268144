// Jobs every replica shares, kept across restarts: a job's state in Redis (shared-state.ts) and its
// pages as BullMQ jobs of one queue, run by the worker of every replica (shared-page.ts). Any
// replica answers any job's status from RedisClient; a replica that dies mid-page loses nothing: BullMQ
// sees the page's lock lapse (SCRAPER_JOB_LOCK_MS) and another replica runs it again, and the
// page's writes are keyed so that the second run neither loses nor doubles anything.
// Politeness per host holds across jobs and replicas (host-slots.ts).
import { randomUUID } from "node:crypto";
import type { Logger } from "@capstan/shared";
import type { RedisClient } from "@capstan/shared/redis";
import { Queue, Worker } from "bullmq";
import { isScraperError, ScraperError } from "../errors.ts";
import type { JobBackend, JobView, PageSlice } from "./backend.ts";
import { sliceOf } from "./backend.ts";
import type { JobDeps } from "./crawler.ts";
import { HostSlots } from "./host-slots.ts";
import type { JobError, JobKind, JobPage, JobStatus, PageOutcome } from "./jobs.ts";
import type { BatchBody, CrawlBody } from "./schemas.ts";
import { CrawlScope } from "./scope.ts";
import { bullJobId, PageRunner, type PageTask, pageKey } from "./shared-page.ts";
import { type JobScripts, jobKeys, withJobScripts } from "./shared-state.ts";

const KIND_NAMES: Record<JobKind, string> = { crawl: "crawl", batch: "batch scrape" };
const QUEUE = "pages";
/** Runs of one page before it is recorded as failed (a replica dying mid-page is not one). */
const ATTEMPTS = 5;
/** Pages added to the queue per call when a batch starts. */
const ADD_CHUNK = 1_000;

export interface SharedJobsOptions {
  /** For the job state: commands bounded in time (commandTimeout). */
  redis: RedisClient;
  /** For BullMQ, which needs a connection without per-request retries limit (its blocking reads). */
  queueRedis: () => RedisClient;
  jobDeps: JobDeps;
  logger: Logger;
  now?: () => number;
  onPage?: (kind: JobKind, outcome: PageOutcome) => void;
  /** A call to Redis failed (the caller is answered 503 JOBS_UNAVAILABLE). */
  onStoreError?: (operation: string) => void;
}

export class SharedJobs implements JobBackend {
  private readonly redis: RedisClient & JobScripts;
  private readonly prefix: string;
  private readonly queue: Queue<PageTask>;
  private readonly worker: Worker<PageTask>;
  private readonly controllers = new Map<string, AbortController>();
  private readonly now: () => number;
  private closing = false;
  /** BullMQ's connections (given as instances, so BullMQ leaves closing them to us). */
  private readonly connections: RedisClient[] = [];
  private readonly o: SharedJobsOptions;

  constructor(o: SharedJobsOptions) {
    this.o = o;
    const cfg = o.jobDeps.config;
    this.prefix = cfg.jobs.redisPrefix;
    this.redis = withJobScripts(o.redis);
    this.now = o.now ?? Date.now;
    const queueConnection = o.queueRedis();
    const workerConnection = o.queueRedis();
    this.connections.push(queueConnection, workerConnection);
    this.queue = new Queue<PageTask>(QUEUE, {
      connection: queueConnection,
      prefix: this.prefix,
      defaultJobOptions: {
        attempts: ATTEMPTS,
        backoff: { type: "exponential", delay: 1_000, jitter: 0.5 },
        removeOnComplete: true,
        removeOnFail: { count: 1_000 },
      },
    });
    const slots = new HostSlots(o.redis, {
      prefix: this.prefix,
      hostConcurrency: cfg.jobs.hostConcurrency,
      leaseMs: cfg.taskTimeoutMs + 30_000,
    });
    const runner = new PageRunner({
      redis: this.redis,
      prefix: this.prefix,
      queue: this.queue,
      slots,
      jobDeps: o.jobDeps,
      signalOf: (job) => this.signalOf(job),
      closing: () => this.closing,
      ...(o.onPage ? { onPage: o.onPage } : {}),
    });
    this.worker = new Worker<PageTask>(QUEUE, (job, token) => runner.run(job, token), {
      connection: workerConnection,
      prefix: this.prefix,
      concurrency: o.jobDeps.jobLimiter.concurrency,
      lockDuration: cfg.jobs.lockMs,
      stalledInterval: cfg.jobs.lockMs,
      // A page whose replica died is taken over, however often that happens.
      maxStalledCount: ATTEMPTS,
    });
    this.worker.on("failed", (job, err) => {
      // The last run of a page failed for a reason of its own (not a scrape error: those are
      // results): the page is recorded as failed so that the job can still end.
      if (!job || this.closing || job.attemptsMade < (job.opts.attempts ?? 1)) return;
      o.logger.warn({ err, job: job.data.job, url: job.data.url }, "page of a shared job failed");
      void runner.fail(job.data, err).catch(() => {});
    });
    this.worker.on("error", (err) => o.logger.warn({ err: err.message }, "shared jobs worker error"));
  }

  private signalOf(job: string): AbortSignal {
    let c = this.controllers.get(job);
    if (!c) {
      if (this.controllers.size >= 1_000) {
        for (const [id, old] of this.controllers) if (!old.signal.aborted) this.controllers.delete(id);
      }
      c = new AbortController();
      this.controllers.set(job, c);
    }
    return c.signal;
  }

  private async create(kind: JobKind, body: unknown): Promise<string> {
    const id = randomUUID();
    const created = this.now();
    const jobs = this.o.jobDeps.config.jobs;
    const expires = created + jobs.ttlMs;
    const k = jobKeys(this.prefix, id);
    const r = Number(
      await this.redis.createJob(
        k.meta,
        `${this.prefix}:jobs`,
        `${this.prefix}:running`,
        id,
        kind,
        JSON.stringify(body),
        created,
        expires,
        jobs.maxActive,
        jobs.maxJobs,
        created,
        this.prefix,
      ),
    );
    if (r === -1) throw new ScraperError("JOBS_FULL", [jobs.maxActive], { retryAfter: 5 });
    if (r === -2) throw new ScraperError("JOBS_KEPT_FULL", [jobs.maxJobs], { retryAfter: 5 });
    return id;
  }

  /** Queues pages of a new job: its state first, then the BullMQ jobs that run them. */
  private async seed(id: string, kind: JobKind, pages: { key: string; url: string }[], limit: number) {
    const k = jobKeys(this.prefix, id);
    const args = pages.flatMap((p) => [p.key, "q"]);
    const [, ...keys] = await this.redis.enqueuePages(k.meta, k.seen, k.pending, k.blocked, limit, 0, ...args);
    const queued = new Set(keys);
    const tasks = pages
      .filter((p) => queued.has(p.key))
      .map((p) => ({ job: id, kind, key: p.key, url: p.url, depth: 0 }));
    for (let i = 0; i < tasks.length; i += ADD_CHUNK) {
      await this.queue.addBulk(
        tasks.slice(i, i + ADD_CHUNK).map((data) => ({ name: kind, data, opts: { jobId: bullJobId(data) } })),
      );
    }
  }

  /** Runs a call on Redis: its own errors stay; Redis's become 503 JOBS_UNAVAILABLE (Retry-After 5). */
  private async store<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (isScraperError(err)) throw err;
      this.o.onStoreError?.(operation);
      this.o.logger.warn({ err: (err as Error).message, operation }, "shared jobs: Redis call failed");
      throw new ScraperError("JOBS_UNAVAILABLE", [(err as Error).message.slice(0, 200)], { retryAfter: 5 });
    }
  }

  async startCrawl(body: CrawlBody): Promise<string> {
    return this.store("start", () => this.startCrawlIn(body));
  }

  async startBatch(body: BatchBody, urls: string[]): Promise<string> {
    return this.store("start", () => this.startBatchIn(body, urls));
  }

  async view(kind: JobKind, id: string, slice: PageSlice): Promise<JobView> {
    return this.store("view", () => this.viewIn(kind, id, slice));
  }

  async errors(kind: JobKind, id: string): Promise<{ errors: JobError[]; robotsBlocked: string[] }> {
    return this.store("errors", () => this.errorsIn(kind, id));
  }

  async cancel(kind: JobKind, id: string): Promise<void> {
    return this.store("cancel", () => this.cancelIn(kind, id));
  }

  private async startCrawlIn(body: CrawlBody): Promise<string> {
    const scope = new CrawlScope(new URL(body.url), body);
    const id = await this.create("crawl", body);
    const limit = Math.min(body.limit ?? this.o.jobDeps.config.jobs.maxPages, this.o.jobDeps.config.jobs.maxPages);
    await this.seed(id, "crawl", [{ key: pageKey(scope.key(scope.start)), url: scope.start.href }], limit);
    return id;
  }

  private async startBatchIn(body: BatchBody, urls: string[]): Promise<string> {
    const id = await this.create("batch", body);
    // Each entry is a page, duplicates included (as the in-memory batch does).
    await this.seed(
      id,
      "batch",
      urls.map((url, i) => ({ key: pageKey(`${i} ${url}`), url })),
      urls.length,
    );
    return id;
  }

  private async meta(kind: JobKind, id: string): Promise<Record<string, string>> {
    const meta = await this.redis.hgetall(jobKeys(this.prefix, id).meta);
    // Redis drops an expired job by its own clock; the jobs' clock (a test's) may run ahead of it.
    const expired = Number(meta.expiresAt) <= this.now();
    if (!meta.status || meta.kind !== kind || expired) throw new ScraperError("JOB_NOT_FOUND", [KIND_NAMES[kind], id]);
    return meta;
  }

  private async viewIn(kind: JobKind, id: string, slice: PageSlice): Promise<JobView> {
    const k = jobKeys(this.prefix, id);
    const meta = await this.meta(kind, id);
    const [warn, raw, count] = await Promise.all([
      this.redis.hgetall(k.warn),
      this.redis.lrange(k.pages, slice.skip, slice.skip + slice.size - 1),
      this.redis.llen(k.pages),
    ]);
    const warnings = Object.values(warn);
    return {
      id,
      kind,
      status: meta.status as JobStatus,
      total: Number(meta.queued),
      completed: Number(meta.completed),
      failed: Number(meta.failed),
      expiresAt: Number(meta.expiresAt),
      warning: warnings.length > 0 ? warnings.join("; ") : undefined,
      pages: sliceOf(
        raw.map((p) => JSON.parse(p) as JobPage),
        { ...slice, skip: 0 },
      ),
      pageCount: count,
    };
  }

  private async errorsIn(kind: JobKind, id: string): Promise<{ errors: JobError[]; robotsBlocked: string[] }> {
    const k = jobKeys(this.prefix, id);
    await this.meta(kind, id);
    const [errors, blocked] = await Promise.all([
      this.redis.lrange(k.errors, 0, -1),
      this.redis.lrange(k.blocked, 0, -1),
    ]);
    return { errors: errors.map((e) => JSON.parse(e) as JobError), robotsBlocked: blocked };
  }

  private async cancelIn(kind: JobKind, id: string): Promise<void> {
    await this.meta(kind, id);
    const before = await this.redis.cancelJob(jobKeys(this.prefix, id).meta, `${this.prefix}:running`, id);
    if (before === "gone") throw new ScraperError("JOB_NOT_FOUND", [KIND_NAMES[kind], id]);
    if (before === "completed" || before === "failed")
      throw new ScraperError("JOB_FINISHED", [KIND_NAMES[kind], id, before]);
    // This replica's renders of the job stop now; another replica's finish but are not kept, and
    // no page of the job starts afterwards (each reads the status first).
    this.controllers.get(id)?.abort(new ScraperError("TIMEOUT", [0, "job cancelled"]));
  }

  async close(): Promise<void> {
    this.closing = true;
    // Pages in flight stop and are not recorded: their locks lapse and another replica (or this
    // one after its restart) runs them again.
    for (const c of this.controllers.values())
      c.abort(new ScraperError("RENDERER_UNAVAILABLE", ["the scraper is shutting down"]));
    await this.worker.close(true).catch(() => {});
    await this.queue.close().catch(() => {});
    for (const c of this.connections) c.disconnect();
  }
}
