// The scraper's Redis connections for shared jobs, made in one place so that a platform-wide
// connection factory can replace this function. Two kinds: the jobs' state (every command bounded
// in time, so a status read answers an error rather than hanging while Redis is away) and BullMQ's
// (no per-command retry limit: its worker blocks on reads and reconnects by itself).
import type { Logger } from "@capstan/shared";
import { Redis } from "ioredis";

export function jobsRedis(url: string, logger: Logger): { state: () => Redis; queue: () => Redis } {
  const watch = (redis: Redis, role: string) => {
    let last = "";
    redis.on("error", (err: Error) => {
      if (err.message !== last) logger.warn({ err: err.message, role }, "redis connection error");
      last = err.message;
    });
    redis.on("ready", () => {
      last = "";
    });
    return redis;
  };
  const retryStrategy = (times: number) => Math.min(2_000, 50 * 2 ** Math.min(times, 6)) * (0.5 + Math.random() / 2);
  return {
    state: () =>
      watch(
        new Redis(url, { connectTimeout: 2_000, commandTimeout: 5_000, maxRetriesPerRequest: 1, retryStrategy }),
        "jobs state",
      ),
    queue: () =>
      watch(new Redis(url, { connectTimeout: 2_000, maxRetriesPerRequest: null, retryStrategy }), "jobs queue"),
  };
}
