// The job store's bounds (jobs kept, jobs running, lifetime, result bytes) and the pump that
// runs a job's pages at a bounded concurrency.
import { describe, expect, it } from "vitest";
import { isScraperError } from "../errors.ts";
import { JobStore, pump } from "./jobs.ts";

const page = (n: number) => ({ markdown: "x".repeat(n), metadata: { title: "t" } }) as never;

function store(over: Partial<ConstructorParameters<typeof JobStore>[0]> = {}) {
  let now = 1_000;
  const s = new JobStore({ maxJobs: 2, maxActive: 1, ttlMs: 100, maxBytes: 1_000, now: () => now, ...over });
  return { s, tick: (ms: number) => (now += ms) };
}

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return isScraperError(err) ? err.code : "other";
  }
  return "none";
};

describe("JobStore", () => {
  it("refuses a job past maxActive, and evicts the oldest finished one past maxJobs", async () => {
    const { s } = store();
    let finish: () => void = () => {};
    const first = s.start("crawl", () => new Promise<void>((r) => (finish = r)));
    expect(code(() => s.start("crawl", async () => {}))).toBe("JOBS_FULL");
    let refused: unknown;
    try {
      s.start("batch", async () => {});
    } catch (err) {
      refused = err;
    }
    // A client's pace, answered like a rate limit with a time to come back.
    expect(refused).toMatchObject({ status: 429, retryAfter: 5 });
    finish();
    await first.done;
    expect(first.status).toBe("completed");
    const second = s.start("batch", async () => {});
    await second.done;
    const third = s.start("crawl", async () => {});
    await third.done;
    expect(code(() => s.get("crawl", first.id))).toBe("JOB_NOT_FOUND");
    expect(s.get("batch", second.id)).toBe(second);
    expect(code(() => s.get("crawl", second.id))).toBe("JOB_NOT_FOUND");
  });

  it("expires jobs after their TTL, cancelling a running one", async () => {
    const { s, tick } = store();
    const job = s.start("crawl", (j) => new Promise<void>((r) => j.signal.addEventListener("abort", () => r())));
    tick(99);
    expect(s.get("crawl", job.id)).toBe(job);
    tick(1);
    expect(code(() => s.get("crawl", job.id))).toBe("JOB_NOT_FOUND");
    await job.done;
    expect(job.status).toBe("cancelled");
  });

  it("cancels a running job once it has stopped; a finished one is 409", async () => {
    const { s } = store();
    const job = s.start("crawl", (j) => new Promise<void>((r) => j.signal.addEventListener("abort", () => r())));
    expect((await s.cancel("crawl", job.id)).status).toBe("cancelled");
    expect((await s.cancel("crawl", job.id)).status).toBe("cancelled");
    const done = s.start("crawl", async () => {});
    await done.done;
    await expect(s.cancel("crawl", done.id)).rejects.toMatchObject({ code: "JOB_FINISHED", status: 409 });
  });

  it("stops keeping results at the byte budget, with a warning", () => {
    const { s } = store();
    const job = s.start("batch", () => new Promise<void>(() => {}));
    job.addPage(page(600));
    job.addPage(page(600));
    expect(job.pages).toHaveLength(1);
    expect(job.stopped).toBe(true);
    expect(job.warning).toContain("SCRAPER_JOB_MAX_BYTES");
  });

  it("marks a job whose run throws as failed", async () => {
    const { s } = store();
    const job = s.start("crawl", async () => {
      throw new Error("boom");
    });
    await job.done;
    expect(job.status).toBe("failed");
  });
});

describe("pump", () => {
  it("runs at most `concurrency` visits at once, and takes work added by visits", async () => {
    const queue = [1];
    let running = 0;
    let most = 0;
    const seen: number[] = [];
    await pump<number>({
      concurrency: 3,
      signal: new AbortController().signal,
      next: () => queue.shift(),
      visit: async (n) => {
        running++;
        most = Math.max(most, running);
        seen.push(n);
        await new Promise((r) => setTimeout(r, 1));
        if (n < 20) queue.push(n * 2, n * 2 + 1);
        running--;
      },
    });
    expect(most).toBe(3);
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 39 }, (_, i) => i + 1));
  });

  it("stops taking work once the signal aborts", async () => {
    const controller = new AbortController();
    let visits = 0;
    await pump<number>({
      concurrency: 1,
      signal: controller.signal,
      next: () => 1,
      visit: async () => {
        if (++visits === 5) controller.abort();
      },
    });
    expect(visits).toBe(5);
  });
});
