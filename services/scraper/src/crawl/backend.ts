// What the job routes need from wherever jobs live: start a crawl or a batch, read one page of a
// job's results with its progress, its errors, cancel it. Two implementations: MemoryJobs
// (memory-jobs.ts, this process only: standalone and single-replica use without Redis) and
// SharedJobs (shared-jobs.ts, Redis with BullMQ: every replica serves every job, jobs survive a
// restart). The routes (api/routes/jobs.ts) see only this interface.
import type { JobError, JobKind, JobPage, JobStatus } from "./jobs.ts";
import type { BatchBody, CrawlBody } from "./schemas.ts";

export interface JobView {
  id: string;
  kind: JobKind;
  status: JobStatus;
  /** Pages the job will fetch, as far as it knows now. */
  total: number;
  /** Pages fetched, with or without success. */
  completed: number;
  failed: number;
  /** Epoch ms when the job and its results are dropped. */
  expiresAt: number;
  warning: string | undefined;
  /** Results [skip, skip + pages.length) of the job's results, in the order they finished. */
  pages: JobPage[];
  /** Results kept so far (the index after the last one). */
  pageCount: number;
}

export interface PageSlice {
  skip: number;
  /** Most results. */
  size: number;
  /** The slice stops growing past this many bytes (at least one result is always returned). */
  maxBytes: number;
}

export interface JobBackend {
  /** Starts a crawl; 429 JOBS_FULL / JOBS_KEPT_FULL as ScraperError when refused. */
  startCrawl(body: CrawlBody): Promise<string>;
  /** Starts a batch scrape of `urls` (already checked). */
  startBatch(body: BatchBody, urls: string[]): Promise<string>;
  /** Progress and one slice of results; 404 JOB_NOT_FOUND when unknown, of another kind or expired. */
  view(kind: JobKind, id: string, slice: PageSlice): Promise<JobView>;
  errors(kind: JobKind, id: string): Promise<{ errors: JobError[]; robotsBlocked: string[] }>;
  /** Cancels a running job (409 JOB_FINISHED when it ended otherwise). */
  cancel(kind: JobKind, id: string): Promise<void>;
  close(): Promise<void>;
}

/** The results of `all` from slice.skip, at most slice.size of them and about slice.maxBytes. */
export function sliceOf(all: readonly JobPage[], slice: PageSlice): JobPage[] {
  const out: JobPage[] = [];
  let bytes = 0;
  for (let i = slice.skip; i < all.length && out.length < slice.size; i++) {
    const page = all[i] as JobPage;
    bytes += Buffer.byteLength(JSON.stringify(page));
    if (out.length > 0 && bytes > slice.maxBytes) break;
    out.push(page);
  }
  return out;
}
