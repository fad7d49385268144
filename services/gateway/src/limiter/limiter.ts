// The QPM limiter the gateway uses: the Redis sliding log (@capstan/shared/limiter, the exact
// algorithm search shares), shared by every replica, while Redis answers; the configured Redis-down policy while the breaker in front of Redis is open or a call
// fails:
//   local     (default) each replica admits its share, floor(QPM / replicas) (share-limiter.ts);
//   deny      503 limiter_unavailable;
//   fail-open no limit at all (an explicit opt-in: the fleet's QPM is not held).
// For one window after Redis returns, "local" keeps the share as a second condition (recovery),
// so what replicas admitted locally is not admitted again. The mode is the capstan_gateway_limiter_mode
// gauge and a readiness condition; the breaker logs each change of Redis' state once.
import type { Logger } from "@capstan/shared";
import { type LimitDecision, MemoryLimiter, type RedisDownPolicy, type RedisLimiter } from "@capstan/shared/limiter";
import { GatewayError } from "../errors.ts";
import type { GatewayMetrics } from "../metrics.ts";
import { type RedisBreaker, RedisUnavailable } from "../redis/breaker.ts";
import { ShareLimiter } from "./share-limiter.ts";

export type LimiterMode = "shared" | "fallback" | "recovering" | "in-process";

export interface QpmLimiterOptions {
  redis: { limiter: RedisLimiter; breaker: RedisBreaker } | undefined;
  windowMs: number;
  policy: RedisDownPolicy;
  /** Gateway replicas sharing the channels' QPM (the local policy's divisor). */
  replicas: number;
  /** At start-up, how long a request waits for the first Redis connection before the policy applies. */
  startWaitMs: number;
  metrics: GatewayMetrics;
  logger: Logger;
  now?: () => number;
}

export class QpmLimiter {
  private readonly opts: QpmLimiterOptions;
  private readonly memory: MemoryLimiter;
  private readonly share: ShareLimiter;
  private readonly now: () => number;
  /** Until when (Unix ms) the recovery window after Redis' return lasts. */
  private recoveringUntil = 0;
  private recoveryTimer: NodeJS.Timeout | undefined;

  constructor(opts: QpmLimiterOptions) {
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    this.memory = new MemoryLimiter({ windowMs: opts.windowMs, now: this.now });
    this.share = new ShareLimiter({ windowMs: opts.windowMs, replicas: opts.replicas });
    if (!opts.redis) {
      opts.logger.warn(
        "no REDIS_URL: QPM limits are enforced by an in-process limiter in each replica (not shared across replicas)",
      );
    }
    opts.redis?.breaker.onChange((state) => this.redisChanged(state));
    this.setModeMetric();
  }

  get mode(): LimiterMode {
    const redis = this.opts.redis;
    if (!redis) return "in-process";
    if (!redis.breaker.closed) return "fallback";
    return this.now() < this.recoveringUntil ? "recovering" : "shared";
  }

  get policy(): RedisDownPolicy {
    return this.opts.policy;
  }

  /** Readiness: a replica with Redis configured waits (up to graceMs after start) for its first connection. */
  notReady(startedAt: number, graceMs: number, now: number): string | undefined {
    const redis = this.opts.redis;
    if (!redis?.limiter.neverConnected || now - startedAt > graceMs) return undefined;
    return "waiting for the first Redis connection";
  }

  /** What /readyz reports about the limiter (the replica stays ready: the policy serves). */
  condition(): { type: string; status: "True" | "False"; reason: string; message: string } {
    const mode = this.mode;
    const rule =
      this.opts.policy === "local"
        ? `each replica admits floor(QPM / ${this.opts.replicas}) per window`
        : this.opts.policy === "deny"
          ? "chat requests are answered 503 limiter_unavailable"
          : "no limit is applied (fail-open)";
    switch (mode) {
      case "shared":
        return { type: "LimiterShared", status: "True", reason: "Redis", message: "QPM shared through Redis" };
      case "in-process":
        return { type: "LimiterShared", status: "False", reason: "NoRedis", message: "no REDIS_URL: per replica" };
      case "recovering":
        return {
          type: "LimiterShared",
          status: "False",
          reason: "Recovering",
          message: `Redis is back; until ${new Date(this.recoveringUntil).toISOString()} a request needs Redis and this replica's share`,
        };
      default:
        return {
          type: "LimiterShared",
          status: "False",
          reason: "RedisUnavailable",
          message: `Redis-down policy "${this.opts.policy}": ${rule}`,
        };
    }
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
    if (!redis) return this.memory.check(channelId, limit);
    if (!redis.limiter.ready && redis.limiter.starting) {
      // At start-up the first connection is still being made: wait for it rather than fall back.
      await redis.limiter.waitReady(this.opts.startWaitMs);
    }
    const recovering = this.opts.policy === "local" && this.now() < this.recoveringUntil;
    if (recovering) {
      const local = this.share.peek(channelId, limit, this.now());
      if (!local.allowed) return local;
    }
    try {
      const decision = await redis.breaker.run(() => redis.limiter.check(channelId, limit));
      if (recovering) {
        if (decision.allowed) this.share.record(channelId, this.now());
      } else {
        this.share.observe(channelId, decision, this.now());
      }
      return decision;
    } catch (err) {
      if (!(err instanceof RedisUnavailable)) throw err;
      return this.fallback(channelId, limit, err.reason);
    }
  }

  private fallback(channelId: string, limit: number, reason: string): LimitDecision {
    this.opts.metrics.limiterBackendErrors.inc({ reason });
    switch (this.opts.policy) {
      case "deny":
        throw new GatewayError("limiter_unavailable");
      case "fail-open":
        return { allowed: true, limit, remaining: limit, resetMs: 0, windowMs: this.opts.windowMs, backend: "none" };
      default:
        return this.share.check(channelId, limit, this.now());
    }
  }

  private redisChanged(state: "open" | "closed"): void {
    clearTimeout(this.recoveryTimer);
    if (state === "closed" && this.opts.policy === "local") {
      this.recoveringUntil = this.now() + this.opts.windowMs;
      this.recoveryTimer = setTimeout(() => {
        this.setModeMetric();
        this.opts.logger.info("limiter recovery window over: QPM limits are Redis' shared log alone");
      }, this.opts.windowMs);
      this.recoveryTimer.unref();
    }
    if (state === "open") this.recoveringUntil = 0;
    this.setModeMetric();
    // The breaker's warning already said Redis' state changed; this line says what the limiter does.
    this.opts.logger.info(
      { policy: this.opts.policy, replicas: this.opts.replicas, mode: this.mode },
      state === "open"
        ? `QPM limiter: Redis unavailable, applying the "${this.opts.policy}" Redis-down policy`
        : `QPM limiter: Redis available again${this.mode === "recovering" ? ", with this replica's share also applied for one window" : ""}`,
    );
  }

  private setModeMetric(): void {
    const mode = this.mode;
    for (const m of ["shared", "fallback", "recovering", "in-process"] as const) {
      this.opts.metrics.limiterMode.set({ mode: m }, m === mode ? 1 : 0);
    }
    this.opts.metrics.limiterDegraded.set(mode === "fallback" || mode === "recovering" ? 1 : 0);
  }

  close(): void {
    clearTimeout(this.recoveryTimer);
  }
}
