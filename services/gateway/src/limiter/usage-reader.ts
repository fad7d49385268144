// Reading what token-limiter.ts wrote: a channel's budget spend in the current period and its
// hourly usage (per agent, upstream and model), for the internal API (routes/internal.ts). One
// pipeline per channel; every key of one channel shares its hash tag.
import type { BudgetSpend, UsageRow } from "@capstan/shared/api";
import { execPipelines, type RedisClient } from "@capstan/shared/redis";
import type { RedisBreaker } from "../redis/breaker.ts";
import { periodOf } from "./budget-period.ts";
import { hourOf, type TokenLimits } from "./token-limiter.ts";
import { channelKeys } from "./token-scripts.ts";

export type { BudgetSpend, UsageRow };

export class UsageReader {
  private readonly redis: RedisClient;
  private readonly breaker: RedisBreaker;
  private readonly keyPrefix: string;

  constructor(opts: { redis: RedisClient; breaker: RedisBreaker; keyPrefix: string }) {
    this.redis = opts.redis;
    this.breaker = opts.breaker;
    this.keyPrefix = opts.keyPrefix;
  }

  async budget(limits: TokenLimits, now = Date.now()): Promise<BudgetSpend | undefined> {
    if (!limits.budget) return undefined;
    const period = periodOf(limits.budget.period, now);
    const spent = await this.breaker.run(() =>
      this.redis.get(channelKeys(this.keyPrefix, limits.id).budget(period.id)),
    );
    return {
      channel: limits.id,
      period: period.id,
      spent: Number(spent ?? 0),
      tokens: limits.budget.tokens,
      resetsAt: new Date(period.endMs).toISOString(),
    };
  }

  /** The last `hours` hours of usage of each channel, oldest first. */
  async usage(channels: readonly string[], hours: number, now = Date.now()): Promise<UsageRow[]> {
    const slots = Array.from({ length: hours }, (_, i) => hourOf(now - (hours - 1 - i) * 3_600_000));
    // One pipeline per channel: its keys share the channel's hash tag (a Redis Cluster slot).
    const pipelines = channels.map((channel) => {
      const keys = channelKeys(this.keyPrefix, channel);
      const pipeline = this.redis.pipeline();
      for (const hour of slots) pipeline.hgetall(keys.usage(hour));
      return pipeline;
    });
    const results = await this.breaker.run(() => execPipelines(pipelines));
    const rows: UsageRow[] = [];
    channels.forEach((channel, c) => {
      slots.forEach((hour, h) => {
        const [err, hash] = results[c]?.[h] ?? [];
        if (err || !hash) return;
        rows.push(...rowsOf(channel, hour, hash as Record<string, string>));
      });
    });
    return rows;
  }
}

/** The rows of one usage hash: fields "<agent>\t<upstream>\t<model>\t<prompt|completion|requests>". */
function rowsOf(channel: string, hour: string, hash: Record<string, string>): UsageRow[] {
  const byKey = new Map<string, UsageRow>();
  for (const [field, value] of Object.entries(hash)) {
    const parts = field.split("\t");
    const kind = parts.pop() as "prompt" | "completion" | "requests";
    const [agent = "", upstream = "", model = ""] = parts;
    const key = parts.join("\t");
    let row = byKey.get(key);
    if (!row) {
      row = { channel, hour, agent, upstream, model, prompt: 0, completion: 0, requests: 0 };
      byKey.set(key, row);
    }
    if (kind === "prompt" || kind === "completion" || kind === "requests") row[kind] = Number(value);
  }
  return [...byKey.values()];
}
