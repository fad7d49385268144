// An async batch scrape (Firecrawl's POST /batch/scrape): the synchronous /scrape/bulk's work as
// a job, on the same machinery as a crawl (job store, background slots, per-job concurrency),
// so its results are polled and paged like a crawl's and it can be cancelled.
import { type JobDeps, jobConcurrency, scrapeForJob, scrapeInput } from "./crawler.ts";
import { type Job, pump } from "./jobs.ts";
import type { BatchBody } from "./schemas.ts";

export async function runBatch(job: Job, body: BatchBody, urls: string[], deps: JobDeps): Promise<void> {
  job.total = urls.length;
  let next = 0;
  await pump<string>({
    concurrency: jobConcurrency(deps, body.maxConcurrency),
    signal: job.signal,
    stopped: () => job.stopped,
    next: () => urls[next++],
    visit: async (url) => {
      try {
        job.addPage(await scrapeForJob(deps, job.signal, scrapeInput(url, body), false));
      } catch (err) {
        if (!job.signal.aborted) job.addError(url, err);
      } finally {
        if (!job.signal.aborted) job.completed++;
      }
    },
  });
}
