// An exact requests-per-window limiter with a Redis-down policy, used by search (per-key requests
// per minute): the Redis sliding log when Redis answers, and the configured policy when it does
// not (local: in-process sliding log per replica; fail-open: no limit; deny: the caller's 503).
// Every fallback is counted in <prefix>_limiter_backend_errors_total, the state is the
// <prefix>_limiter_degraded gauge, and each change of state is logged once. The gateway's QPM
// limiter (services/gateway/src/limiter/) uses the same Redis sliding log and the same policies
// behind a circuit breaker, with a per-replica share for `local`.
import type { Counter, Gauge, Histogram } from "prom-client";
import type { Logger } from "../logger.ts";
import { Counter as PromCounter, Gauge as PromGauge, Histogram as PromHistogram, type Registry } from "../metrics.ts";
import type { LimitDecision } from "./decision.ts";
import { MemoryLimiter } from "./memory-limiter.ts";
import type { RedisLimiter } from "./redis-limiter.ts";

/**
 * What a limiter does while Redis cannot answer (CAPSTAN_LIMITER_REDIS_DOWN_POLICY, the same
 * values in every service): `local` limits in process, per replica; `deny` refuses with the
 * service's 503; `fail-open` admits everything (an explicit opt-in: the shared limit is not held).
 */
export const REDIS_DOWN_POLICIES = ["local", "deny", "fail-open"] as const;
export type RedisDownPolicy = (typeof REDIS_DOWN_POLICIES)[number];

/** The four metrics a limiter reports; limiterMetrics() makes them with a service's prefix. */
export interface LimiterMetrics {
  limiterDecisions: Counter<"backend" | "result">;
  limiterBackendErrors: Counter<"reason">;
  limiterDegraded: Gauge;
  limiterLatency: Histogram<"backend">;
}

/** <prefix>_limiter_decisions_total, _backend_errors_total, _degraded, _duration_seconds. */
export function limiterMetrics(registry: Registry, prefix: string): LimiterMetrics {
  const registers = [registry];
  return {
    limiterDecisions: new PromCounter({
      name: `${prefix}_limiter_decisions_total`,
      help: "Limiter decisions by backend (redis, local, none) and result",
      labelNames: ["backend", "result"] as const,
      registers,
    }),
    limiterBackendErrors: new PromCounter({
      name: `${prefix}_limiter_backend_errors_total`,
      help: "Limiter calls Redis could not answer (unavailable, timeout, error); the Redis-down policy applied",
      labelNames: ["reason"] as const,
      registers,
    }),
    limiterDegraded: new PromGauge({
      name: `${prefix}_limiter_degraded`,
      help: "1 while the Redis limiter is unavailable and the Redis-down policy is in force",
      registers,
    }),
    limiterLatency: new PromHistogram({
      name: `${prefix}_limiter_duration_seconds`,
      help: "Limiter decision latency by backend",
      labelNames: ["backend"] as const,
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    }),
  };
}

export interface WindowLimiterOptions {
  redis: RedisLimiter | undefined;
  windowMs: number;
  policy: RedisDownPolicy;
  timeoutMs: number;
  metrics: LimiterMetrics;
  logger: Logger;
  /** The error thrown under the "deny" policy while Redis cannot answer (the service's 503). */
  unavailable: () => Error;
  /** What is limited, for log lines: "QPM limits", "search rate limits". */
  what?: string;
}

class LimiterTimeout extends Error {}

export class WindowLimiter {
  private readonly opts: WindowLimiterOptions;
  private readonly local: MemoryLimiter;
  private readonly what: string;
  private degraded = false;

  constructor(opts: WindowLimiterOptions) {
    this.opts = opts;
    this.what = opts.what ?? "rate limits";
    this.local = new MemoryLimiter({ windowMs: opts.windowMs });
    if (!opts.redis) {
      opts.logger.warn(
        `no REDIS_URL: ${this.what} are enforced by an in-process limiter in each replica (not shared across replicas)`,
      );
    }
  }

  get backend(): "redis" | "local" {
    return this.opts.redis && !this.degraded ? "redis" : "local";
  }

  /** Readiness: a replica with Redis configured waits (up to graceMs after start) for its first connection. */
  notReady(startedAt: number, graceMs: number, now: number): string | undefined {
    const redis = this.opts.redis;
    if (!redis?.neverConnected || now - startedAt > graceMs) return undefined;
    return "waiting for the first Redis connection";
  }

  async check(subject: string, limit: number): Promise<LimitDecision> {
    const started = performance.now();
    const decision = await this.decide(subject, limit);
    const { metrics } = this.opts;
    metrics.limiterLatency.observe({ backend: decision.backend }, (performance.now() - started) / 1000);
    metrics.limiterDecisions.inc({ backend: decision.backend, result: decision.allowed ? "allowed" : "rejected" });
    return decision;
  }

  private async decide(subject: string, limit: number): Promise<LimitDecision> {
    const redis = this.opts.redis;
    if (!redis) return this.local.check(subject, limit);
    if (!redis.ready) {
      // At start-up the first connection is still being made: wait for it rather than fall back,
      // or two fresh replicas could each accept a full quota from their local logs.
      const up = redis.starting && (await redis.waitReady(this.opts.timeoutMs));
      if (!up) return this.fallback(subject, limit, "unavailable", undefined);
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      const decision = await Promise.race([
        redis.check(subject, limit),
        new Promise<never>((_, reject) => {
          // When the timer fires, first let the poll phase run once (setImmediate): if the event
          // loop was merely busy, Redis' answer is already waiting and wins the race, so a slow
          // loop does not send requests to the per-replica fallback (which would overshoot).
          timer = setTimeout(() => setImmediate(() => reject(new LimiterTimeout())), this.opts.timeoutMs);
        }),
      ]);
      if (this.degraded) this.setDegraded(false);
      return decision;
    } catch (err) {
      return this.fallback(subject, limit, err instanceof LimiterTimeout ? "timeout" : "error", err);
    } finally {
      clearTimeout(timer);
    }
  }

  private fallback(subject: string, limit: number, reason: string, err: unknown): LimitDecision {
    this.opts.metrics.limiterBackendErrors.inc({ reason });
    if (!this.degraded) this.setDegraded(true, reason, err);
    switch (this.opts.policy) {
      case "deny":
        throw this.opts.unavailable();
      case "fail-open":
        return { allowed: true, limit, remaining: limit, resetMs: 0, windowMs: this.opts.windowMs, backend: "none" };
      default:
        return this.local.check(subject, limit);
    }
  }

  private setDegraded(on: boolean, reason?: string, err?: unknown): void {
    this.degraded = on;
    this.opts.metrics.limiterDegraded.set(on ? 1 : 0);
    if (on) {
      this.opts.logger.warn(
        { reason, err: err instanceof Error ? err.message : undefined, policy: this.opts.policy },
        `Redis limiter unavailable (${reason}): applying the "${this.opts.policy}" Redis-down policy`,
      );
    } else {
      this.opts.logger.info(`Redis limiter available again: ${this.what} are shared across replicas`);
    }
  }
}
