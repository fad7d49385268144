// Background jobs (crawls and async batch scrapes) and the store that keeps them. A job lives in
// this process's memory: its id is only known here, and it is gone when the process restarts or
// when it expires. That keeps the scraper a single stateless-on-disk process (no database, no
// queue service), at a cost stated in docs/scraper.md: behind a Service with several replicas, a
// client must reach the replica that started its job (session affinity), or the store must move
// to something shared (Redis, with the pages fetched by any replica). Everything is bounded: the
// number of jobs kept, the number running, their lifetime, and the bytes of results each keeps.
import { randomUUID } from "node:crypto";
import type { ScrapeData } from "../api/scrape-service.ts";
import { type ErrorCode, isScraperError, ScraperError } from "../errors.ts";

export type JobKind = "crawl" | "batch";
export type JobStatus = "scraping" | "completed" | "failed" | "cancelled";

/** A result page: what /scrape would answer as `data` (shaped by the job's formats). */
export type JobPage = ScrapeData;
export type PageOutcome = "ok" | "error" | "robots_blocked";

export interface JobError {
  id: string;
  timestamp: string;
  url: string;
  error: string;
  code: ErrorCode;
}

/** Errors kept per job, beyond which only the count goes on. */
const MAX_ERRORS = 1_000;

const KIND_NAMES: Record<JobKind, string> = { crawl: "crawl", batch: "batch scrape" };

export class Job {
  readonly id = randomUUID();
  readonly kind: JobKind;
  readonly createdAt: number;
  readonly expiresAt: number;
  status: JobStatus = "scraping";
  /** Pages this job will fetch, as far as it knows now. */
  total = 0;
  /** Pages fetched, with or without success. */
  completed = 0;
  failed = 0;
  readonly pages: JobPage[] = [];
  readonly errors: JobError[] = [];
  readonly robotsBlocked: string[] = [];
  /** What the status's `warning` says, by topic: a later message on a topic replaces the earlier one. */
  private readonly warnings = new Map<string, string>();
  /** Aborted by a cancel (and when the store closes): in-flight scrapes stop, no new one starts. */
  readonly controller = new AbortController();
  /** Set when the job stops scheduling for a reason of its own (result budget reached). */
  stopped = false;
  done: Promise<void> = Promise.resolve();
  private bytes = 0;
  private readonly maxBytes: number;
  private readonly onPage: ((kind: JobKind, outcome: PageOutcome) => void) | undefined;

  constructor(
    kind: JobKind,
    now: number,
    ttlMs: number,
    maxBytes: number,
    onPage?: (kind: JobKind, outcome: PageOutcome) => void,
  ) {
    this.kind = kind;
    this.createdAt = now;
    this.expiresAt = now + ttlMs;
    this.maxBytes = maxBytes;
    this.onPage = onPage;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The job's warnings in one sentence list, or undefined when it has none. */
  get warning(): string | undefined {
    return this.warnings.size > 0 ? [...this.warnings.values()].join("; ") : undefined;
  }

  /** Sets the warning on a topic, or clears it (undefined). */
  warn(topic: string, message: string | undefined): void {
    if (message === undefined) this.warnings.delete(topic);
    else this.warnings.set(topic, message);
  }

  get running(): boolean {
    return this.status === "scraping";
  }

  /** Keeps a page, or stops the job once its results would pass the byte budget. */
  addPage(page: JobPage): void {
    this.onPage?.(this.kind, "ok");
    const size = Buffer.byteLength(JSON.stringify(page));
    if (this.bytes + size > this.maxBytes) {
      this.warn("bytes", `results reached SCRAPER_JOB_MAX_BYTES (${this.maxBytes} bytes): the job stopped early`);
      this.stopped = true;
      return;
    }
    this.bytes += size;
    this.pages.push(page);
  }

  addError(url: string, err: unknown): void {
    this.onPage?.(this.kind, "error");
    this.failed++;
    if (this.errors.length >= MAX_ERRORS) return;
    const e = isScraperError(err) ? err : new ScraperError("INTERNAL");
    this.errors.push({ id: randomUUID(), timestamp: new Date().toISOString(), url, error: e.message, code: e.code });
  }

  /** A URL robots.txt disallows: listed, never fetched. */
  addRobotsBlocked(url: string): void {
    this.onPage?.(this.kind, "robots_blocked");
    if (this.robotsBlocked.length < MAX_ERRORS) this.robotsBlocked.push(url);
  }
}

export interface JobStoreOptions {
  maxJobs: number;
  maxActive: number;
  ttlMs: number;
  maxBytes: number;
  now?: () => number;
  /** A job's run threw (it is marked failed). */
  onError?: (job: Job, err: unknown) => void;
  onStart?: (job: Job) => void;
  /** The job stopped (completed, failed or cancelled), after `ms`. */
  onFinish?: (job: Job, ms: number) => void;
  onPage?: (kind: JobKind, outcome: PageOutcome) => void;
}

export class JobStore {
  private readonly jobs = new Map<string, Job>();
  private readonly o: JobStoreOptions;
  private readonly now: () => number;

  constructor(opts: JobStoreOptions) {
    this.o = opts;
    this.now = opts.now ?? Date.now;
  }

  get active(): number {
    let n = 0;
    for (const job of this.jobs.values()) if (job.running) n++;
    return n;
  }

  /**
   * Starts `run` as a new job and returns it at once. Refused with 429 (and Retry-After) when
   * SCRAPER_JOBS_MAX_ACTIVE jobs run (JOBS_FULL), or SCRAPER_JOBS_MAX are kept and none has
   * finished (JOBS_KEPT_FULL).
   */
  start(kind: JobKind, run: (job: Job) => Promise<void>): Job {
    this.sweep();
    if (this.active >= this.o.maxActive) throw new ScraperError("JOBS_FULL", [this.o.maxActive], { retryAfter: 5 });
    if (this.jobs.size >= this.o.maxJobs) {
      // Map order is insertion order: the first finished job is the oldest one.
      const oldest = [...this.jobs.values()].find((j) => !j.running);
      if (!oldest) throw new ScraperError("JOBS_KEPT_FULL", [this.o.maxJobs], { retryAfter: 5 });
      this.jobs.delete(oldest.id);
    }
    const job = new Job(kind, this.now(), this.o.ttlMs, this.o.maxBytes, this.o.onPage);
    this.jobs.set(job.id, job);
    this.o.onStart?.(job);
    const started = performance.now();
    job.done = run(job)
      .then(
        () => {
          if (job.status === "scraping") job.status = "completed";
        },
        (err: unknown) => {
          if (job.status !== "scraping") return;
          job.status = "failed";
          job.warn("failed", isScraperError(err) ? err.message : "the job failed unexpectedly");
          this.o.onError?.(job, err);
        },
      )
      .finally(() => this.o.onFinish?.(job, performance.now() - started));
    return job;
  }

  /** The job of that kind and id; 404 JOB_NOT_FOUND when unknown, of another kind, or expired. */
  get(kind: JobKind, id: string): Job {
    this.sweep();
    const job = this.jobs.get(id);
    if (!job || job.kind !== kind) throw new ScraperError("JOB_NOT_FOUND", [KIND_NAMES[kind], id]);
    return job;
  }

  /**
   * Cancels a running job and answers once it has stopped: its in-flight scrapes are aborted and
   * no page is fetched for it afterwards. A job already cancelled answers the same; one that
   * finished otherwise is 409 JOB_FINISHED.
   */
  async cancel(kind: JobKind, id: string): Promise<Job> {
    const job = this.get(kind, id);
    if (job.status === "completed" || job.status === "failed") {
      throw new ScraperError("JOB_FINISHED", [KIND_NAMES[kind], id, job.status]);
    }
    job.status = "cancelled";
    job.controller.abort(new ScraperError("TIMEOUT", [0, "job cancelled"]));
    await job.done;
    return job;
  }

  /** Drops expired jobs (a running one is cancelled first). */
  sweep(): void {
    const now = this.now();
    for (const job of this.jobs.values()) {
      if (job.expiresAt > now) continue;
      if (job.running) {
        job.status = "cancelled";
        job.controller.abort(new ScraperError("TIMEOUT", [0, "job expired"]));
      }
      this.jobs.delete(job.id);
    }
  }

  /** Stops every running job (process shutdown) and waits for them. */
  async close(): Promise<void> {
    const running = [...this.jobs.values()].filter((j) => j.running);
    for (const job of running) {
      job.status = "cancelled";
      job.controller.abort(new ScraperError("RENDERER_UNAVAILABLE", ["the scraper is shutting down"]));
    }
    await Promise.all(running.map((j) => j.done));
    this.jobs.clear();
  }
}

/**
 * Runs `visit` on what `next()` hands out, at most `concurrency` at once, until `next()` has
 * nothing (and nothing is in flight that could add more), the signal aborts or `stopped()`.
 * `next()` is asked again whenever a visit ends, so a visit may add work (a crawl's links).
 */
export function pump<T>(opts: {
  concurrency: number;
  signal: AbortSignal;
  next: () => T | undefined;
  visit: (item: T) => Promise<void>;
  stopped?: () => boolean;
}): Promise<void> {
  return new Promise<void>((resolve) => {
    let running = 0;
    const halted = () => opts.signal.aborted || (opts.stopped?.() ?? false);
    const tick = () => {
      while (!halted() && running < opts.concurrency) {
        const item = opts.next();
        if (item === undefined) break;
        running++;
        opts
          .visit(item)
          .catch(() => {})
          .finally(() => {
            running--;
            tick();
          });
      }
      if (running === 0) resolve();
    };
    tick();
  });
}
