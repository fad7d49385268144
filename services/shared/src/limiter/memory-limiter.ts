// The same sliding log as the Redis limiter, in process memory: the limiter of a replica with no
// Redis configured, and the fallback of the "local" Redis-down policy (exact per replica, so N
// replicas may together accept up to N × limit while Redis is down).
import type { LimitDecision } from "./decision.ts";

export class MemoryLimiter {
  private readonly logs = new Map<string, number[]>();
  private readonly windowMs: number;
  private readonly now: () => number;
  private checks = 0;

  constructor(opts: { windowMs: number; now?: () => number }) {
    this.windowMs = opts.windowMs;
    this.now = opts.now ?? Date.now;
  }

  check(channelId: string, limit: number): LimitDecision {
    const now = this.now();
    let log = this.logs.get(channelId);
    if (!log) {
      log = [];
      this.logs.set(channelId, log);
    }
    const cutoff = now - this.windowMs;
    let drop = 0;
    while (drop < log.length && (log[drop] as number) <= cutoff) drop++;
    if (drop > 0) log.splice(0, drop);
    const allowed = log.length < limit;
    if (allowed) log.push(now);
    if (++this.checks % 10_000 === 0) this.sweep(cutoff);
    const oldest = log[0];
    return {
      allowed,
      limit,
      remaining: Math.max(0, limit - log.length),
      resetMs: oldest === undefined ? 0 : oldest + this.windowMs - now,
      windowMs: this.windowMs,
      backend: "local",
    };
  }

  /** Forgets channels with nothing in their window, so memory follows the active channels. */
  private sweep(cutoff: number): void {
    for (const [id, log] of this.logs) {
      const last = log.at(-1);
      if (last === undefined || last <= cutoff) this.logs.delete(id);
    }
  }
}
