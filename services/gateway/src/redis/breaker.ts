// The circuit breaker in front of Redis (cockatiel), shared by the QPM limiter and the history
// writer. Closed: calls go to Redis, each bounded by a timeout. After `failureThreshold`
// consecutive failures (an error, a timeout, no connection) it opens, and from then on callers get
// RedisUnavailable at once without touching Redis: nothing waits on a frozen Redis (SIGSTOP, a
// hung node, a partition). While it is open a background probe (PING) runs every probeIntervalMs
// as cockatiel's half-open trial; the first probe Redis answers closes it. Requests never serve as
// the trial, so none of them waits on a Redis that may still be frozen. One log line per change
// between open and closed (never one per request); the state is a metric.
import type { Logger } from "@capstan/shared";
import type { RedisClient } from "@capstan/shared/redis";
import { CircuitState, ConsecutiveBreaker, circuitBreaker, handleAll } from "cockatiel";
import type { GatewayMetrics } from "../metrics.ts";

export type BreakerState = "closed" | "open" | "half_open";
export type UnavailableReason = "circuit_open" | "timeout" | "error";

/** Redis could not be used for this call; `reason` says why (metric label). */
export class RedisUnavailable extends Error {
  readonly reason: UnavailableReason;
  constructor(reason: UnavailableReason, message: string) {
    super(message);
    this.name = "RedisUnavailable";
    this.reason = reason;
  }
}

class CallTimeout extends Error {}

export interface RedisBreakerOptions {
  redis: RedisClient;
  /** How long one call may wait for Redis before it counts as a failure. */
  timeoutMs: number;
  /** Consecutive failures that open the breaker. */
  failureThreshold: number;
  /** While open: how often a probe asks Redis whether it answers again. */
  probeIntervalMs: number;
  metrics: GatewayMetrics;
  logger: Logger;
}

const STATE_NAMES: Record<CircuitState, BreakerState> = {
  [CircuitState.Closed]: "closed",
  [CircuitState.Open]: "open",
  [CircuitState.HalfOpen]: "half_open",
  [CircuitState.Isolated]: "open",
};

export class RedisBreaker {
  private readonly opts: RedisBreakerOptions;
  private readonly policy;
  private readonly listeners: Array<(state: "open" | "closed") => void> = [];
  private probeTimer: NodeJS.Timeout | undefined;
  private lastError = "";
  private isOpen = false;
  /** Unix ms of the last change to open or closed. */
  changedAt = Date.now();

  constructor(opts: RedisBreakerOptions) {
    this.opts = opts;
    this.policy = circuitBreaker(handleAll, {
      halfOpenAfter: opts.probeIntervalMs,
      breaker: new ConsecutiveBreaker(opts.failureThreshold),
    });
    this.setStateMetric("closed");
    // Cockatiel breaks again after each failed half-open probe: only the first break is a change.
    this.policy.onBreak(() => {
      if (!this.isOpen) this.changed("open");
    });
    this.policy.onReset(() => {
      if (this.isOpen) this.changed("closed");
    });
    this.policy.onStateChange((s) => this.setStateMetric(STATE_NAMES[s]));
  }

  get state(): BreakerState {
    return STATE_NAMES[this.policy.state];
  }

  get closed(): boolean {
    return this.policy.state === CircuitState.Closed;
  }

  /** Called with "open" or "closed" on each change (after the log line). */
  onChange(listener: (state: "open" | "closed") => void): void {
    this.listeners.push(listener);
  }

  /**
   * Runs fn against Redis, bounded by the timeout. Throws RedisUnavailable at once, without
   * calling fn, while the breaker is not closed; and when fn fails or times out.
   */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.closed) throw new RedisUnavailable("circuit_open", "Redis circuit is open");
    try {
      return await this.policy.execute(() => this.withTimeout(fn));
    } catch (err) {
      if (err instanceof CallTimeout)
        throw new RedisUnavailable("timeout", `no answer from Redis within ${this.opts.timeoutMs} ms`);
      if (err instanceof RedisUnavailable) throw err;
      this.lastError = (err as Error).message;
      // Cockatiel refuses calls that raced the opening: the same as an open breaker for the caller.
      const reason = this.closed ? "error" : "circuit_open";
      throw new RedisUnavailable(reason, (err as Error).message);
    }
  }

  private async withTimeout<T>(fn: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        fn(),
        new Promise<never>((_, reject) => {
          // When the timer fires, let the poll phase run once first (setImmediate): if the event
          // loop was merely busy, Redis' answer is already waiting and wins the race, so a slow
          // loop is not taken for a slow Redis.
          timer = setTimeout(() => setImmediate(() => reject(new CallTimeout())), this.opts.timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  private setStateMetric(state: BreakerState): void {
    for (const s of ["closed", "open", "half_open"] as const) {
      this.opts.metrics.redisBreakerState.set({ state: s }, s === state ? 1 : 0);
    }
  }

  private changed(state: "open" | "closed"): void {
    this.isOpen = state === "open";
    this.changedAt = Date.now();
    this.opts.metrics.redisBreakerTransitions.inc({ to: state });
    if (state === "open") {
      this.opts.logger.warn(
        { err: this.lastError || undefined, probeIntervalMs: this.opts.probeIntervalMs },
        `Redis circuit opened after ${this.opts.failureThreshold} failed calls: no request waits on Redis until a probe answers`,
      );
      this.startProbing();
    } else {
      this.stopProbing();
      this.opts.logger.warn("Redis circuit closed: Redis answers again");
    }
    for (const l of this.listeners) l(state);
  }

  private startProbing(): void {
    if (this.probeTimer) return;
    // Ticks more often than the half-open delay, so a probe starts soon after it elapses;
    // cockatiel refuses the early ones without calling Redis.
    const tick = Math.max(10, Math.floor(this.opts.probeIntervalMs / 4));
    let probing = false;
    this.probeTimer = setInterval(() => {
      if (probing || this.closed) return;
      probing = true;
      this.policy
        .execute(() => this.withTimeout(() => this.opts.redis.ping()))
        .catch((err: unknown) => {
          if (!(err instanceof CallTimeout) && (err as Error).name !== "BrokenCircuitError") {
            this.lastError = (err as Error).message;
          }
        })
        .finally(() => {
          probing = false;
        });
    }, tick);
    this.probeTimer.unref();
  }

  private stopProbing(): void {
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
  }

  close(): void {
    this.stopProbing();
  }
}
