// Which store keeps the console's sessions: Redis when the console serves a cluster and a Redis is
// configured (the chart gives it the data plane's, so it runs as several replicas), else this
// process's memory (standalone mode, or a single replica without Redis).
import type { Logger } from "@capstan/shared";
import type { KubeConfig } from "@capstan/shared/kube";
import { createRedisClient, describeRedisTarget, redisTarget } from "@capstan/shared/redis";
import type { FastifyInstance } from "fastify";
import { type ConsoleConfig, standaloneOf } from "./config.ts";
import { RedisSessionStore } from "./redis-sessions.ts";
import { MemorySessionStore, type SessionStore } from "./sessions.ts";
import { type ConsoleApi, kubeAsUser, UserApi } from "./user-api.ts";

/** A bound on each session command: the page's request fails with 503 rather than hang. */
const REDIS_COMMAND_TIMEOUT_MS = 2_000;

export function sessionStore(
  config: ConsoleConfig,
  deps: { cluster?: KubeConfig; logger: Logger },
  app: FastifyInstance,
): SessionStore<ConsoleApi> {
  const limits = { idleMs: config.idleTimeoutSeconds * 1000, maxMs: config.maxSessionSeconds * 1000 };
  const target = standaloneOf(config) ? undefined : redisTarget(config.redisUrl, config.redis);
  const cluster = deps.cluster;
  if (!target || !cluster) {
    const store = new MemorySessionStore<ConsoleApi>(limits);
    app.addHook("onClose", () => store.close());
    deps.logger.info("sessions in this process's memory (one replica)");
    return store;
  }
  const redis = createRedisClient(target, deps.logger, { commandTimeoutMs: REDIS_COMMAND_TIMEOUT_MS });
  const store = new RedisSessionStore<ConsoleApi>(redis, limits, (token) => new UserApi(kubeAsUser(cluster, token)));
  app.addHook("onClose", async () => {
    await store.close();
    redis.disconnect();
  });
  deps.logger.info({ redis: describeRedisTarget(target) }, "sessions in Redis (any number of replicas)");
  return store;
}
