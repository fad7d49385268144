// Refreshes as jobs beside the reconcile: a KnowledgeBase's reconcile starts (or resumes) its
// refresh here and returns at once, so a 30-minute crawl holds no controller worker; when the
// job ends, its KnowledgeBase is enqueued and the next reconcile takes the outcome and writes the
// status (one read of search, one write). At most one job per KnowledgeBase. The job's state
// that must outlive this process lives elsewhere: its id in the KnowledgeBase's status (a
// restarted or newly elected operator resumes under it) and the documents it wrote in search,
// stamped with it. stopAll() aborts every job when this instance stops leading.
import type { RefreshOutcome } from "./refresh.ts";

export interface FinishedRefresh {
  refresh: string;
  /** The KnowledgeBase as the job began with it (its metadata.generation is what the status observes). */
  started: { generation?: number | undefined };
  outcome?: RefreshOutcome;
  /** The job stopped without an outcome (aborted, or an unexpected error): it is resumed. */
  error?: Error;
}

interface Job extends FinishedRefresh {
  abort: AbortController;
  done: Promise<void>;
  finished: boolean;
}

export class RefreshJobs {
  private readonly jobs = new Map<string, Job>();
  private readonly settled: (key: string) => void;

  /** settled(key) is called once a job ended (the controller enqueues the KnowledgeBase). */
  constructor(settled: (key: string) => void) {
    this.settled = settled;
  }

  /** The job of this KnowledgeBase still running, if any. */
  running(key: string): { refresh: string } | undefined {
    const job = this.jobs.get(key);
    return job && !job.finished ? { refresh: job.refresh } : undefined;
  }

  /** The ended job of this KnowledgeBase, handed over once. */
  take(key: string): FinishedRefresh | undefined {
    const job = this.jobs.get(key);
    if (!job?.finished) return undefined;
    this.jobs.delete(key);
    const { refresh, started, outcome, error } = job;
    return { refresh, started, ...(outcome ? { outcome } : {}), ...(error ? { error } : {}) };
  }

  start(
    key: string,
    refresh: string,
    started: FinishedRefresh["started"],
    run: (signal: AbortSignal) => Promise<RefreshOutcome>,
  ): void {
    if (this.running(key)) return;
    const abort = new AbortController();
    const job = { refresh, started, abort, finished: false } as Job;
    job.done = run(abort.signal).then(
      (outcome) => {
        job.outcome = outcome;
      },
      (err: Error) => {
        job.error = err;
      },
    );
    job.done = job.done.finally(() => {
      job.finished = true;
      if (!abort.signal.aborted) this.settled(key);
    });
    this.jobs.set(key, job);
  }

  get size(): number {
    return [...this.jobs.values()].filter((j) => !j.finished).length;
  }

  /** Aborts every job and waits for them to stop; their refreshes are resumed by the next leader. */
  async stopAll(): Promise<void> {
    const jobs = [...this.jobs.values()];
    for (const j of jobs) j.abort.abort(new Error("the operator stopped leading"));
    await Promise.all(jobs.map((j) => j.done));
    this.jobs.clear();
  }
}
