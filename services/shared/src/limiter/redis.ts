// The Redis client of a data path (the gateway's limiter and history, search's limiter): fail fast
// while disconnected (the limiter's Redis-down policy applies), reconnect forever.
import { Redis } from "ioredis";
import type { Logger } from "../logger.ts";

export function createRedis(url: string, logger: Logger, commandTimeoutMs = 5_000): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 2_000,
    // A bound on every command (history writes, reads); the limiter races its own shorter timeout.
    commandTimeout: commandTimeoutMs,
    retryStrategy: (times) => Math.min(2_000, 50 * 2 ** Math.min(times, 6)),
    lazyConnect: false,
    // No auto-pipelining: it builds a Pipeline object for every command, which at low concurrency
    // costs more CPU than the write it saves. The limiter corks the socket for one tick instead
    // (RedisLimiter.cork), so concurrent limiter calls still leave in one write.
    enableAutoPipelining: false,
  });
  let lastError = "";
  redis.on("error", (err: Error) => {
    if (err.message !== lastError) logger.warn({ err: err.message }, "redis connection error");
    lastError = err.message;
  });
  redis.on("ready", () => {
    lastError = "";
    logger.info("redis connected");
  });
  return redis;
}
