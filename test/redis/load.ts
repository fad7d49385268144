// A bounded load of chat requests against several gateways for the failover tests: `workers`
// loops, each sending one request at a time (round-robin over the gateways) for `durationMs`,
// recording each request's start, end and status; and a watcher that samples the gateways'
// limiter mode (/readyz) so a test can say how long they decided without Redis.
import { post } from "./helpers.ts";

export interface Sample {
  start: number;
  end: number;
  status: number;
  gateway: number;
}

export interface LoadOptions {
  urls: string[];
  key: string;
  durationMs: number;
  workers: number;
  /** Pause between one worker's requests. */
  pauseMs: number;
  /** Called once, `atMs` after the start (the fault). */
  fault?: { atMs: number; run: () => Promise<void> };
}

export interface LoadResult {
  samples: Sample[];
  /** When the fault ran (ms since epoch). */
  faultAt: number;
}

export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const samples: Sample[] = [];
  const started = Date.now();
  const deadline = started + opts.durationMs;
  let next = 0;
  let faultAt = 0;
  const worker = async () => {
    while (Date.now() < deadline) {
      const gateway = next++ % opts.urls.length;
      const start = Date.now();
      let status = 0;
      try {
        const res = await post(opts.urls[gateway] as string, opts.key, AbortSignal.timeout(15_000));
        await res.arrayBuffer();
        status = res.status;
      } catch {
        status = -1; // no answer at all (connection refused, timed out)
      }
      samples.push({ start, end: Date.now(), status, gateway });
      await new Promise((r) => setTimeout(r, opts.pauseMs));
    }
  };
  const fault = opts.fault
    ? new Promise<void>((resolve, reject) => {
        setTimeout(() => {
          faultAt = Date.now();
          opts.fault?.run().then(resolve, reject);
        }, opts.fault?.atMs);
      })
    : Promise.resolve();
  await Promise.all([...Array.from({ length: opts.workers }, worker), fault]);
  return { samples: samples.sort((a, b) => a.start - b.start), faultAt };
}

/**
 * The most admitted requests certainly decided inside one window of `windowMs`: requests whose
 * whole [start, end] lies in it (a lower bound of the true count, so a result above the limit is a
 * real overshoot, never an artefact of timing).
 */
export function maxAdmittedInWindow(samples: Sample[], windowMs: number): number {
  const ok = samples.filter((s) => s.status === 200);
  let max = 0;
  for (const first of ok) {
    const until = first.start + windowMs;
    const n = ok.filter((s) => s.start >= first.start && s.end < until).length;
    max = Math.max(max, n);
  }
  return max;
}

/** The span from the first to the last answer in the 5xx range (or with no answer), 0 when none. */
export function errorWindow(samples: Sample[]): { count: number; spanMs: number } {
  const bad = samples.filter((s) => s.status >= 500 || s.status < 0);
  if (bad.length === 0) return { count: 0, spanMs: 0 };
  return { count: bad.length, spanMs: Math.max(...bad.map((s) => s.end)) - Math.min(...bad.map((s) => s.start)) };
}

export interface ModeWatch {
  /** Stops sampling; returns how long each gateway had its Redis breaker open (deciding without Redis). */
  stop(): Promise<number[]>;
}

/** Samples whether each gateway reaches Redis every `everyMs` (its /readyz RedisAvailable condition: the breaker). */
export function watchModes(internalUrls: string[], everyMs = 100): ModeWatch {
  const notShared: Array<{ from: number; to: number }[]> = internalUrls.map(() => []);
  let running = true;
  const loop = async (i: number) => {
    let since: number | undefined;
    while (running) {
      const t = Date.now();
      const shared = await fetch(`${internalUrls[i]}/readyz`, { signal: AbortSignal.timeout(2000) })
        .then(async (r) => {
          const body = (await r.json()) as { conditions?: Array<{ type: string; status: string }> };
          return body.conditions?.find((c) => c.type === "RedisAvailable")?.status === "True";
        })
        .catch(() => false);
      if (!shared && since === undefined) since = t;
      if (shared && since !== undefined) {
        notShared[i]?.push({ from: since, to: t });
        since = undefined;
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
    if (since !== undefined) notShared[i]?.push({ from: since, to: Date.now() });
  };
  const loops = internalUrls.map((_, i) => loop(i));
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return notShared.map((spans) => spans.reduce((sum, s) => sum + (s.to - s.from), 0));
    },
  };
}
