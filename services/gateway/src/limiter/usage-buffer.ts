// Hourly usage of channels without token limits, added up in memory and written to Redis once a
// second in one pipeline (HINCRBY per field, EXPIRE per key), instead of one Redis call per
// request: accounting then costs the hot path nothing but a Map update. Channels with a TPM or a
// budget are accounted at once by token-limiter.ts (their limits need the numbers now). A replica
// that dies loses at most the last second of its counts; a graceful stop writes them (flush).
// Counts Redis cannot take are counted (capstan_gateway_usage_writes_total{outcome="dropped"}).
import type { Logger } from "@capstan/shared";
import { execPipelines, type RedisClient } from "@capstan/shared/redis";
import type { GatewayMetrics } from "../metrics.ts";
import { type RedisBreaker, RedisUnavailable } from "../redis/breaker.ts";

export class UsageBuffer {
  private pending = new Map<string, Map<string, number>>();
  private readonly timer: NodeJS.Timeout;
  private readonly opts: {
    redis: RedisClient;
    breaker: RedisBreaker;
    retentionSeconds: number;
    metrics: GatewayMetrics;
    logger: Logger;
  };

  constructor(opts: UsageBuffer["opts"] & { everyMs?: number }) {
    this.opts = opts;
    this.timer = setInterval(() => void this.flush(), opts.everyMs ?? 1_000);
    this.timer.unref();
  }

  /** Adds one request's counts to the hour's hash `key`, under `field` (agent, upstream, model). */
  add(key: string, field: string, prompt: number, completion: number): void {
    let fields = this.pending.get(key);
    if (!fields) {
      fields = new Map();
      this.pending.set(key, fields);
    }
    for (const [kind, n] of [
      ["prompt", prompt],
      ["completion", completion],
      ["requests", 1],
    ] as const) {
      const f = `${field}\t${kind}`;
      fields.set(f, (fields.get(f) ?? 0) + n);
    }
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    // One pipeline per key: a Redis Cluster takes a pipeline only when its keys share a slot.
    const pipelines: ReturnType<RedisClient["pipeline"]>[] = [];
    let requests = 0;
    for (const [key, fields] of batch) {
      const pipeline = this.opts.redis.pipeline();
      for (const [field, n] of fields) {
        pipeline.hincrby(key, field, n);
        if (field.endsWith("\trequests")) requests += n;
      }
      pipeline.expire(key, this.opts.retentionSeconds);
      pipelines.push(pipeline);
    }
    try {
      await this.opts.breaker.run(() => execPipelines(pipelines));
      this.opts.metrics.usageWrites.inc({ outcome: "ok" }, requests);
    } catch (err) {
      this.opts.metrics.usageWrites.inc({ outcome: "dropped" }, requests);
      if (!(err instanceof RedisUnavailable))
        this.opts.logger.warn({ err: (err as Error).message }, "usage write failed");
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
