// robots.txt's Crawl-delay, applied within one crawl job: the pages of a host that asks for a
// delay are fetched one at a time, and each starts at least the delay after the previous one
// ended (as Nutch and Heritrix measure it). Measured from the end rather than the start, the
// spacing holds at the site whatever the render pipeline adds before a request leaves (a worker
// slot, Chromium's navigation): the next request starts after the previous answer arrived, plus
// the delay. Hosts without a delay are not paced at all (the job's concurrency bounds them).
//
// The wait is bounded twice: the delay itself is capped by the crawler (SCRAPER_CRAWL_DELAY_MAX),
// and a turn that would begin after the job's fetching time is over is refused instead of waited
// for, so a crawl ends with what it has (and says why) rather than outliving its results.
import { setTimeout as sleep } from "node:timers/promises";

export interface PacerOptions {
  /** Milliseconds of fetching time the job has left (negative when it is over). */
  timeLeft: () => number;
  /** A monotonic clock (ms) for the spacing itself; performance.now by default. */
  now?: () => number;
}

interface HostState {
  /** Settles when the last page queued for this host has ended. */
  tail: Promise<void>;
  /** When the previous page of this host ended (monotonic ms). */
  lastEnd: number;
}

/** Called once the page is fetched (or failed): the host's next turn counts its delay from now. */
export type EndTurn = () => void;

export class CrawlPacer {
  private readonly hosts = new Map<string, HostState>();
  private readonly timeLeft: () => number;
  private readonly now: () => number;

  constructor(opts: PacerOptions) {
    this.timeLeft = opts.timeLeft;
    this.now = opts.now ?? (() => performance.now());
  }

  /**
   * Waits for `host`'s turn: its previous page has ended and `delayMs` has passed since. Resolves
   * to the function that ends the turn, or to undefined when the turn would begin after the job's
   * fetching time (nothing is fetched then). Rejects with the signal's reason on abort. A delay of
   * 0 is no pacing: the turn is immediate and concurrent with others.
   */
  async turn(host: string, delayMs: number, signal: AbortSignal): Promise<EndTurn | undefined> {
    if (delayMs <= 0) return () => {};
    let state = this.hosts.get(host);
    if (!state) {
      state = { tail: Promise.resolve(), lastEnd: Number.NEGATIVE_INFINITY };
      this.hosts.set(host, state);
    }
    const s = state;
    const previous = s.tail;
    let release: () => void = () => {};
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    s.tail = previous.then(() => mine);
    let granted = false;
    try {
      await untilSettledOrAborted(previous, signal);
      const due = s.lastEnd + delayMs;
      if (due - this.now() > this.timeLeft()) return undefined;
      // Timers may fire a millisecond early by this clock: wait again until the delay has passed.
      for (let wait = due - this.now(); wait > 0; wait = due - this.now()) {
        await sleep(Math.ceil(wait), undefined, { signal });
      }
      granted = true;
      return () => {
        s.lastEnd = this.now();
        release();
      };
    } finally {
      // A turn refused or abandoned lets the next page of the host have its own.
      if (!granted) release();
    }
  }
}

function untilSettledOrAborted(p: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    void p.then(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    });
  });
}

/** The spacing applied to a host: its robots.txt Crawl-delay (seconds), at most `maxMs`; 0 for none. */
export function appliedDelayMs(seconds: number | undefined, maxMs: number): number {
  if (seconds === undefined || !(seconds > 0)) return 0;
  return Math.min(Math.ceil(seconds * 1000), maxMs);
}

/** A duration as people read it: "750 ms", "12 s", "8 min 20 s", "2 h 5 min". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return s % 60 ? `${min} min ${s % 60} s` : `${min} min`;
  const h = Math.floor(min / 60);
  return min % 60 ? `${h} h ${min % 60} min` : `${h} h`;
}
