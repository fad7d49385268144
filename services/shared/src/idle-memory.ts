// Gives memory back to the system when a process goes quiet after work.
//
// Under load V8 grows its young generation to its maximum (two 32 MB semi-spaces on a 64-bit
// Node 24) and keeps the old generation's freed pages in a pool; both stay resident when the
// traffic stops. V8's own memory reducer would release them, but it starts only when it sees a
// low allocation rate, which it samples at garbage collections: once the process is quiet no
// collection happens, so it keeps seeing the rate of the last burst and never starts
// (`--trace-memory-reducer` prints "high alloc, foreground" every 8 s for as long as the process
// stays idle). Smaller semi-spaces or V8's memory-saver mode would keep the heap small under load
// too, at a CPU cost per request the gateway cannot pay (docs/benchmarks.md, "Memory").
//
// So here: once the event loop has been quiet for `quietMs` and the resident set has grown by
// `minGrowthBytes` since the last release (or since start-up, whose compilation leaves the most
// garbage), one memory-reducing full collection: the `gc` extension's "last-resort" flavour
// (V8's CollectAllAvailableGarbage: the young generation shrunk, pooled pages released). It
// then waits for the process to grow again. Only when the process runs with `--expose-gc` (the
// images' command does); without it this does nothing. It costs one collection per quiet
// period (tens of milliseconds), never anything while requests are being served.
import { performance } from "node:perf_hooks";
import type { Logger } from "./logger.ts";

type GcFunction = (options?: { type?: "major" | "minor"; execution?: "sync" | "async"; flavor?: string }) => void;

export interface IdleMemoryOptions {
  /** How long the event loop must stay quiet before memory is released (default 5 s). */
  quietMs?: number;
  /** How often the loop's utilisation is checked (default 1 s). */
  checkMs?: number;
  /** A check counts as quiet below this event-loop utilisation (default 0.05). */
  quietBelow?: number;
  /** Growth of the resident set since the last release that makes another one worth it (default 8 MiB). */
  minGrowthBytes?: number;
  logger?: Pick<Logger, "debug" | "info">;
  /** Called after each release with the resident set before and after (tests, diagnostics). */
  onRelease?: (r: { rssBefore: number; rssAfter: number; ms: number }) => void;
}

/** Starts watching for quiet periods; returns a function that stops it. */
export function releaseMemoryWhenIdle(opts: IdleMemoryOptions = {}): () => void {
  const gc = (globalThis as { gc?: GcFunction }).gc;
  if (typeof gc !== "function") {
    opts.logger?.debug("node runs without --expose-gc: memory is not released when idle");
    return () => {};
  }
  const quietMs = opts.quietMs ?? 5_000;
  const checkMs = opts.checkMs ?? 1_000;
  const quietBelow = opts.quietBelow ?? 0.05;
  const minGrowth = opts.minGrowthBytes ?? 8 * 2 ** 20;
  let baseline = 0; // the resident set after the last release; 0: none yet
  let quietSince = performance.now();
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization >= quietBelow;
    last = now;
    if (busy) {
      quietSince = performance.now();
      return;
    }
    if (performance.now() - quietSince < quietMs) return;
    const rssBefore = process.memoryUsage.rss();
    if (baseline > 0 && rssBefore - baseline < minGrowth) return;
    const started = performance.now();
    gc({ type: "major", execution: "sync", flavor: "last-resort" });
    const ms = performance.now() - started;
    baseline = process.memoryUsage.rss();
    // The collection itself used the loop: the next quiet period starts now.
    last = performance.eventLoopUtilization();
    quietSince = performance.now();
    const mib = (n: number) => Math.round(n / 2 ** 20);
    opts.logger?.debug(
      { rssBeforeMiB: mib(rssBefore), rssAfterMiB: mib(baseline), ms: Math.round(ms) },
      "idle: memory released",
    );
    opts.onRelease?.({ rssBefore, rssAfter: baseline, ms });
  }, checkMs);
  timer.unref();
  return () => clearInterval(timer);
}
