// Crawl-delay pacing: pages of a paced host one at a time, each starting at least the delay after
// the previous one ended; other hosts and a delay of 0 not paced; a turn past the job's fetching
// time refused at once; a cancelled wait frees the host; the delay capped. The delays here are a
// few tens of milliseconds and every assertion on time is a lower bound (what the pacer promises).
import { describe, expect, it } from "vitest";
import { appliedDelayMs, CrawlPacer, duration } from "./pacing.ts";

const signal = () => new AbortController().signal;
const forever = () => Number.POSITIVE_INFINITY;

/** Runs `n` pages of `host` at once through the pacer; each page takes `workMs`. Returns [start, end] of each. */
async function pages(pacer: CrawlPacer, host: string, delayMs: number, n: number, workMs = 5) {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const end = await pacer.turn(host, delayMs, signal());
      if (!end) return undefined;
      const started = performance.now();
      await new Promise((r) => setTimeout(r, workMs));
      const ended = performance.now();
      end();
      return [started, ended] as const;
    }),
  );
}

describe("CrawlPacer", () => {
  it("runs a paced host's pages one at a time, each at least the delay after the previous ended", async () => {
    const spans = (await pages(new CrawlPacer({ timeLeft: forever }), "a.example", 40, 4)) as [number, number][];
    spans.sort((x, y) => x[0] - y[0]);
    for (let i = 1; i < spans.length; i++) {
      const [start] = spans[i] as [number, number];
      const [, previousEnd] = spans[i - 1] as [number, number];
      expect(start - previousEnd).toBeGreaterThanOrEqual(40);
    }
  });

  it("does not pace a delay of 0, and paces each host apart", async () => {
    const pacer = new CrawlPacer({ timeLeft: forever });
    let inFlight = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 3 }, async () => {
        const end = await pacer.turn("free.example", 0, signal());
        inFlight++;
        most = Math.max(most, inFlight);
        await new Promise((r) => setTimeout(r, 20));
        inFlight--;
        end?.();
      }),
    );
    expect(most).toBe(3);
    // Two paced hosts: each host's first turn is immediate, nothing to space it from (were it not,
    // the 10 s delay would outlast the test's timeout).
    const [a, b] = await Promise.all([
      pacer.turn("a.example", 10_000, signal()),
      pacer.turn("b.example", 10_000, signal()),
    ]);
    expect(a).toBeTypeOf("function");
    expect(b).toBeTypeOf("function");
  });

  it("refuses a turn that would begin after the job's fetching time, without waiting for it", async () => {
    let left = 60_000;
    const pacer = new CrawlPacer({ timeLeft: () => left });
    const first = await pacer.turn("a.example", 30_000, signal());
    expect(first).toBeTypeOf("function");
    first?.();
    left = 29_000;
    // Refused at once: were the 30 s delay waited for, the test's timeout would fail it.
    expect(await pacer.turn("a.example", 30_000, signal())).toBeUndefined();
    // The refusal freed the host: the next turn is judged (and refused) too, not stuck behind it.
    expect(await pacer.turn("a.example", 30_000, signal())).toBeUndefined();
  });

  it("a cancelled wait rejects with the reason and lets the host's next page have its turn", async () => {
    const pacer = new CrawlPacer({ timeLeft: forever });
    const end = await pacer.turn("a.example", 30, signal());
    const cancel = new AbortController();
    const waiting = pacer.turn("a.example", 30, cancel.signal);
    const after = pacer.turn("a.example", 30, signal());
    cancel.abort(new Error("cancelled"));
    await expect(waiting).rejects.toThrow("cancelled");
    end?.();
    const next = await after;
    expect(next).toBeTypeOf("function");
  });
});

describe("appliedDelayMs", () => {
  it("is robots.txt's Crawl-delay in ms, at most the cap; none for a missing or non-positive one", () => {
    expect(appliedDelayMs(undefined, 30_000)).toBe(0);
    expect(appliedDelayMs(0, 30_000)).toBe(0);
    expect(appliedDelayMs(-5, 30_000)).toBe(0);
    expect(appliedDelayMs(0.5, 30_000)).toBe(500);
    expect(appliedDelayMs(10, 30_000)).toBe(10_000);
    expect(appliedDelayMs(86_400, 30_000)).toBe(30_000);
    expect(appliedDelayMs(Number.POSITIVE_INFINITY, 30_000)).toBe(30_000);
    expect(appliedDelayMs(10, 0)).toBe(0);
  });

  it("durations read as people write them", () => {
    expect(duration(750)).toBe("750 ms");
    expect(duration(30_000)).toBe("30 s");
    expect(duration(500_000)).toBe("8 min 20 s");
    expect(duration(30_000_000)).toBe("8 h 20 min");
  });
});
