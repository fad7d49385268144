// The one Redis client factory of the data plane (the gateway's limiter and history, search's
// limiter): the same behaviour in every topology. Commands fail fast while there is no connection
// (no offline queue, no retry of a failed command: the callers' Redis-down policies decide what a
// failure means), connections are made again forever with capped exponential backoff, and one log
// line per distinct error (never the password: ioredis' errors carry no credentials and the
// description below leaves them out).
//
// Sentinel: ioredis asks the sentinels for the master and asks again whenever the connection to it
// drops, so a failover costs one reconnect. Cluster: ioredis learns the slot map from the seed
// nodes and refreshes it on MOVED, on a lost node and every slotsRefreshInterval.
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";
import type { Logger } from "../logger.ts";
import { describeRedisTarget, type RedisTarget, splitHostPort } from "./topology.ts";

/** A standalone/Sentinel connection or a cluster client; both run the same commands and scripts. */
export type RedisClient = Redis | Cluster;

export interface RedisClientOptions {
  /** A bound on every command; the limiter races its own shorter timeout. */
  commandTimeoutMs?: number;
  /**
   * A connection that blocks on reads (a BullMQ worker's, the scraper's queue): no command
   * timeout, and commands wait for a reconnection instead of failing (BullMQ's requirement).
   */
  blocking?: boolean;
}

const backoff = (times: number) => Math.min(2_000, 50 * 2 ** Math.min(times, 6));

function nodeOptions(target: RedisTarget, commandTimeoutMs: number, blocking: boolean): RedisOptions {
  const t = target.topology;
  return {
    enableOfflineQueue: blocking,
    maxRetriesPerRequest: blocking ? null : 0,
    connectTimeout: 2_000,
    ...(blocking ? {} : { commandTimeout: commandTimeoutMs }),
    retryStrategy: backoff,
    lazyConnect: false,
    // No auto-pipelining: it builds a Pipeline object for every command, which at low concurrency
    // costs more CPU than the write it saves. The limiter corks the socket for one tick instead
    // (RedisLimiter.cork), so concurrent limiter calls still leave in one write.
    enableAutoPipelining: false,
    ...(t.username ? { username: t.username } : {}),
    ...(t.password ? { password: t.password } : {}),
    ...(t.tls && target.mode !== "standalone" ? { tls: {} } : {}),
  };
}

function build(target: RedisTarget, commandTimeoutMs: number, blocking: boolean): RedisClient {
  const t = target.topology;
  const opts = nodeOptions(target, commandTimeoutMs, blocking);
  if (target.mode === "standalone") return new Redis(target.url, opts);
  if (target.mode === "sentinel") {
    return new Redis({
      ...opts,
      sentinels: t.sentinels.map(splitHostPort),
      name: t.masterName,
      role: "master",
      ...(t.sentinelPassword ? { sentinelPassword: t.sentinelPassword } : {}),
      ...(t.tls ? { enableTLSForSentinelMode: true, sentinelTLS: {} } : {}),
      sentinelRetryStrategy: backoff,
      // After a failover the old master may come back as a replica: READONLY on a write means the
      // connection must be made again, to whichever node the sentinels name now.
      reconnectOnError: (err) => err.message.startsWith("READONLY"),
      failoverDetector: true,
    });
  }
  const clusterOpts: ClusterOptions = {
    enableOfflineQueue: blocking,
    enableReadyCheck: true,
    scaleReads: "master",
    clusterRetryStrategy: backoff,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    maxRedirections: 16,
    slotsRefreshTimeout: 2_000,
    slotsRefreshInterval: 5_000,
    enableAutoPipelining: false,
    redisOptions: opts,
  };
  return new Cluster(t.nodes.map(splitHostPort), clusterOpts);
}

export function createRedisClient(target: RedisTarget, logger: Logger, options: RedisClientOptions = {}): RedisClient {
  const redis = build(target, options.commandTimeoutMs ?? 5_000, options.blocking ?? false);
  const where = describeRedisTarget(target);
  let lastError = "";
  redis.on("error", (err: Error) => {
    if (err.message !== lastError) logger.warn({ err: err.message, redis: where }, "redis connection error");
    lastError = err.message;
  });
  redis.on("ready", () => {
    lastError = "";
    logger.info({ redis: where }, "redis connected");
  });
  return redis;
}

/** True for the cluster client (no single socket to cork, nodes behind it). */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}

type Pipeline = ReturnType<RedisClient["pipeline"]>;

/**
 * Runs the pipelines and returns their results, or throws the first command's error. ioredis
 * resolves a pipeline whose commands failed (no connection, a refused command) with the errors
 * in its results, so a caller that only awaits exec() would take an outage for success; behind a
 * circuit breaker that resets its count of consecutive failures and keeps it from ever opening.
 */
export async function execPipelines(pipelines: Pipeline[]): Promise<[Error | null, unknown][][]> {
  const results = await Promise.all(pipelines.map((p) => p.exec()));
  const out: [Error | null, unknown][][] = [];
  for (const result of results) {
    if (!result) throw new Error("a Redis pipeline was discarded");
    for (const [err] of result) if (err) throw err;
    out.push(result);
  }
  return out;
}
