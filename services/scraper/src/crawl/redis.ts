// The scraper's Redis connections for shared jobs, from the data plane's shared factory
// (@capstan/shared/redis), so they follow the same topology as the gateway's and search's: one
// server (REDIS_URL), a Sentinel group or a Redis Cluster (REDIS_MODE and its addresses). Every
// key of one Scraper carries its prefix's hash tag, so a Redis Cluster keeps them in one slot.
// Two kinds: the jobs' state (every command bounded in time, so a status read answers an error
// rather than hanging while Redis is away) and BullMQ's (no per-command limit: its worker blocks on
// reads and reconnects by itself).
import type { Logger } from "@capstan/shared";
import { createRedisClient, type RedisClient, type RedisTarget } from "@capstan/shared/redis";

export interface JobsRedis {
  state: () => RedisClient;
  queue: () => RedisClient;
}

export function jobsRedis(target: RedisTarget, logger: Logger): JobsRedis {
  return {
    state: () => createRedisClient(target, logger.child({ role: "jobs state" }), { commandTimeoutMs: 5_000 }),
    queue: () => createRedisClient(target, logger.child({ role: "jobs queue" }), { blocking: true }),
  };
}
