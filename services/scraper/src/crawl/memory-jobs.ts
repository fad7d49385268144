// Jobs in this process's memory (JobStore of jobs.ts): what the scraper runs without REDIS_URL
// (standalone mode, a single replica). A job is known only to the process that started it and is
// lost when it restarts; SharedJobs (shared-jobs.ts) lifts both limits.
import type { JobBackend, JobView, PageSlice } from "./backend.ts";
import { sliceOf } from "./backend.ts";
import { runBatch } from "./batch.ts";
import { type JobDeps, runCrawl } from "./crawler.ts";
import type { JobKind, JobStore } from "./jobs.ts";
import type { BatchBody, CrawlBody } from "./schemas.ts";

export class MemoryJobs implements JobBackend {
  private readonly store: JobStore;
  private readonly deps: JobDeps;

  constructor(store: JobStore, deps: JobDeps) {
    this.store = store;
    this.deps = deps;
  }

  async startCrawl(body: CrawlBody): Promise<string> {
    return this.store.start("crawl", (j) => runCrawl(j, body, this.deps)).id;
  }

  async startBatch(body: BatchBody, urls: string[]): Promise<string> {
    return this.store.start("batch", (j) => runBatch(j, body, urls, this.deps)).id;
  }

  async view(kind: JobKind, id: string, slice: PageSlice): Promise<JobView> {
    const job = this.store.get(kind, id);
    return {
      id,
      kind,
      status: job.status,
      total: job.total,
      completed: job.completed,
      failed: job.failed,
      expiresAt: job.expiresAt,
      warning: job.warning,
      pages: sliceOf(job.pages, slice),
      pageCount: job.pages.length,
    };
  }

  async errors(kind: JobKind, id: string) {
    const job = this.store.get(kind, id);
    return { errors: job.errors, robotsBlocked: job.robotsBlocked };
  }

  async cancel(kind: JobKind, id: string): Promise<void> {
    await this.store.cancel(kind, id);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
