// The local share of the "local" Redis-down policy: while Redis cannot be asked, each of the N
// gateway replicas admits at most floor(QPM / N) requests of a channel in any window, so the fleet
// together stays within the QPM. Two things make the share hold across the edges of an outage:
//
// - Requests the fleet admitted through Redis just before the outage still count. A replica
//   remembers, per channel, the shared count Redis reported on its last answer; while that count
//   may still be in the window (until its time + window), the replica counts ceil(count / N) of it
//   against its own share (every replica does the same, so together they count it once).
// - After Redis returns, the shared log does not hold what replicas admitted locally. For one
//   window after its breaker closes (the recovery window) a replica admits a request only when
//   Redis allows it and its own count under the share rule is still below its share, so no burst
//   follows recovery; after that window everything admitted locally has left it.
import type { LimitDecision } from "@capstan/shared/limiter";

interface ChannelState {
  /** Unix ms of the requests this replica admitted under the share rule, oldest first. */
  admitted: number[];
  /** The shared count on Redis' last answer for this channel and when it came. */
  last?: { count: number; at: number };
}

export class ShareLimiter {
  private readonly channels = new Map<string, ChannelState>();
  private readonly windowMs: number;
  private readonly replicas: number;
  private checks = 0;

  constructor(opts: { windowMs: number; replicas: number }) {
    this.windowMs = opts.windowMs;
    this.replicas = opts.replicas;
  }

  /** This replica's part of a channel's QPM while Redis cannot be asked. */
  shareOf(limit: number): number {
    return Math.floor(limit / this.replicas);
  }

  /** Remembers the shared count of a Redis answer (the fleet's admissions in the window). */
  observe(channelId: string, decision: LimitDecision, now: number): void {
    const state = this.stateOf(channelId);
    state.last = { count: Math.max(0, decision.limit - decision.remaining), at: now };
    this.maybeSweep(now - this.windowMs);
  }

  /** Decides under the share rule and, when admitted, counts the request. */
  check(channelId: string, limit: number, now: number): LimitDecision {
    const decision = this.peek(channelId, limit, now);
    if (decision.allowed) this.record(channelId, now);
    return decision;
  }

  /** Whether the share rule would admit a request now, without counting it. */
  peek(channelId: string, limit: number, now: number): LimitDecision {
    const state = this.stateOf(channelId);
    const cutoff = now - this.windowMs;
    let drop = 0;
    while (drop < state.admitted.length && (state.admitted[drop] as number) <= cutoff) drop++;
    if (drop > 0) state.admitted.splice(0, drop);
    if (state.last && state.last.at <= cutoff) state.last = undefined;
    this.maybeSweep(cutoff);

    const share = this.shareOf(limit);
    const before = state.last ? Math.ceil(state.last.count / this.replicas) : 0;
    const count = state.admitted.length + before;
    // A slot frees up when the oldest counted request leaves the window.
    const frees = [state.admitted[0], state.last?.at].filter((t): t is number => t !== undefined);
    const resetMs = frees.length === 0 ? 0 : Math.min(...frees) + this.windowMs - now;
    const allowed = count < share;
    return {
      allowed,
      limit,
      remaining: Math.max(0, share - count - (allowed ? 1 : 0)),
      resetMs: allowed || share > 0 ? Math.max(0, resetMs) : this.windowMs,
      windowMs: this.windowMs,
      backend: "local",
    };
  }

  record(channelId: string, now: number): void {
    this.stateOf(channelId).admitted.push(now);
  }

  private stateOf(channelId: string): ChannelState {
    let state = this.channels.get(channelId);
    if (!state) {
      state = { admitted: [] };
      this.channels.set(channelId, state);
    }
    return state;
  }

  /** Now and then forgets channels with nothing left in the window, so memory follows the active ones. */
  private maybeSweep(cutoff: number): void {
    if (++this.checks % 10_000 !== 0) return;
    for (const [id, s] of this.channels) {
      const newest = Math.max(s.admitted.at(-1) ?? 0, s.last?.at ?? 0);
      if (newest <= cutoff) this.channels.delete(id);
    }
  }
}
