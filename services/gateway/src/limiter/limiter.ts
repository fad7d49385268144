// The QPM limiter the gateway uses: the Redis sliding log when Redis answers, and the configured
// Redis-down policy when it does not (local: in-process sliding log per replica; allow: no limit;
// deny: 503). Every fallback is counted in gateway_limiter_backend_errors_total, the state is the
// gateway_limiter_degraded gauge, and each change of state is logged once.
import type { Logger } from "@capstan/shared";
import { GatewayError } from "../errors.ts";
import type { GatewayMetrics } from "../metrics.ts";
import type { LimitDecision } from "./decision.ts";
import { MemoryLimiter } from "./memory-limiter.ts";
import type { RedisLimiter } from "./redis-limiter.ts";

export type RedisDownPolicy = "local" | "allow" | "deny";

export interface QpmLimiterOptions {
  redis: RedisLimiter | undefined;
  windowMs: number;
  policy: RedisDownPolicy;
  timeoutMs: number;
  metrics: GatewayMetrics;
  logger: Logger;
}

class LimiterTimeout extends Error {}

export class QpmLimiter {
  private readonly opts: QpmLimiterOptions;
  private readonly local: MemoryLimiter;
  private degraded = false;

  constructor(opts: QpmLimiterOptions) {
    this.opts = opts;
    this.local = new MemoryLimiter({ windowMs: opts.windowMs });
    if (!opts.redis) {
      opts.logger.warn(
        "no REDIS_URL: QPM limits are enforced by an in-process limiter in each replica (not shared across replicas)",
      );
    }
  }

  get backend(): "redis" | "local" {
    return this.opts.redis && !this.degraded ? "redis" : "local";
  }

  /** Readiness: a replica with Redis configured waits (up to graceMs after start) for its first connection. */
  notReady(startedAt: number, graceMs: number, now: number): string | undefined {
    const redis = this.opts.redis;
    if (!redis?.starting || now - startedAt > graceMs) return undefined;
    return "waiting for the first Redis connection";
  }

  async check(channelId: string, limit: number): Promise<LimitDecision> {
    const started = performance.now();
    const decision = await this.decide(channelId, limit);
    const { metrics } = this.opts;
    metrics.limiterLatency.observe({ backend: decision.backend }, (performance.now() - started) / 1000);
    metrics.limiterDecisions.inc({ backend: decision.backend, result: decision.allowed ? "allowed" : "rejected" });
    return decision;
  }

  private async decide(channelId: string, limit: number): Promise<LimitDecision> {
    const redis = this.opts.redis;
    if (!redis) return this.local.check(channelId, limit);
    if (!redis.ready) {
      // At start-up the first connection is still being made: wait for it rather than fall back,
      // or two fresh replicas could each accept a full quota from their local logs.
      const up = redis.starting && (await redis.waitReady(this.opts.timeoutMs));
      if (!up) return this.fallback(channelId, limit, "unavailable", undefined);
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      const decision = await Promise.race([
        redis.check(channelId, limit),
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
      return this.fallback(channelId, limit, err instanceof LimiterTimeout ? "timeout" : "error", err);
    } finally {
      clearTimeout(timer);
    }
  }

  private fallback(channelId: string, limit: number, reason: string, err: unknown): LimitDecision {
    this.opts.metrics.limiterBackendErrors.inc({ reason });
    if (!this.degraded) this.setDegraded(true, reason, err);
    switch (this.opts.policy) {
      case "deny":
        throw new GatewayError("limiter_unavailable");
      case "allow":
        return { allowed: true, limit, remaining: limit, resetMs: 0, windowMs: this.opts.windowMs, backend: "none" };
      default:
        return this.local.check(channelId, limit);
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
      this.opts.logger.info("Redis limiter available again: QPM limits are shared across replicas");
    }
  }
}
