// Which Redis a data-plane process talks to, in the three shapes teams run it: one server
// (standalone: REDIS_URL), a Sentinel group (the sentinels' addresses and the master's name: the
// client asks the sentinels who the master is, and again after a failover), or a Redis Cluster
// (seed nodes: the client learns the slot map from them and follows MOVED/ASK). One schema for
// the gateway and search, read from the same variables in both; the password comes from
// REDIS_PASSWORD (a Secret in Kubernetes), never from the URL the operator writes.
import { z } from "zod";
import { type EnvMap, envParsers } from "../config.ts";

const hostPort = z
  .string()
  .regex(/^[A-Za-z0-9.\-_[\]:]+:\d{1,5}$/, "must be host:port")
  .describe("host:port");

export const redisTopologySchema = z
  .object({
    /** standalone: redisUrl; sentinel: sentinels + masterName; cluster: nodes. */
    mode: z.enum(["standalone", "sentinel", "cluster"]).default("standalone"),
    /** Sentinel mode: every sentinel as host:port (the client tries them in turn). */
    sentinels: z.array(hostPort).default([]),
    /** Sentinel mode: the name the sentinels monitor the master under. */
    masterName: z.string().min(1).default("mymaster"),
    /** Cluster mode: seed nodes as host:port (any subset of the cluster; the rest is discovered). */
    nodes: z.array(hostPort).default([]),
    /** ACL user (Redis 6+); absent: the default user. */
    username: z.string().min(1).optional(),
    /** The data nodes' password (REDIS_PASSWORD); overrides one in redisUrl. */
    password: z.string().min(1).optional(),
    /** Sentinel mode: the sentinels' own password, when they require one. */
    sentinelPassword: z.string().min(1).optional(),
    /** TLS to sentinels and data nodes (standalone says it with rediss://). */
    tls: z.boolean().default(false),
  })
  .superRefine((t, ctx) => {
    if (t.mode === "sentinel" && t.sentinels.length === 0)
      ctx.addIssue({
        code: "custom",
        path: ["sentinels"],
        message: "sentinel mode needs at least one sentinel (REDIS_SENTINELS=host:port,...)",
      });
    if (t.mode === "cluster" && t.nodes.length === 0)
      ctx.addIssue({
        code: "custom",
        path: ["nodes"],
        message: "cluster mode needs at least one seed node (REDIS_CLUSTER_NODES=host:port,...)",
      });
  })
  .prefault({});

export type RedisTopology = z.infer<typeof redisTopologySchema>;

/** The variables of the topology, under a config's `redis` key (the same in every service). */
export const redisEnvMap: EnvMap = {
  REDIS_MODE: "redis.mode",
  REDIS_SENTINELS: { path: "redis.sentinels", parse: envParsers.list },
  REDIS_SENTINEL_MASTER: "redis.masterName",
  REDIS_CLUSTER_NODES: { path: "redis.nodes", parse: envParsers.list },
  REDIS_USERNAME: "redis.username",
  REDIS_PASSWORD: "redis.password",
  REDIS_SENTINEL_PASSWORD: "redis.sentinelPassword",
  REDIS_TLS: { path: "redis.tls", parse: envParsers.bool },
};

/** Where to connect: everything a client needs, or undefined when no Redis is configured. */
export type RedisTarget =
  | { mode: "standalone"; url: string; topology: RedisTopology }
  | { mode: "sentinel" | "cluster"; topology: RedisTopology };

export function redisTarget(url: string | undefined, topology: RedisTopology): RedisTarget | undefined {
  if (topology.mode === "standalone") return url ? { mode: "standalone", url, topology } : undefined;
  return { mode: topology.mode, topology };
}

/** For logs and status: the topology and its addresses, never a password. */
export function describeRedisTarget(target: RedisTarget): string {
  const t = target.topology;
  if (target.mode === "standalone") {
    const u = new URL(target.url);
    return `standalone ${u.protocol}//${u.host}`;
  }
  if (target.mode === "sentinel") return `sentinel master "${t.masterName}" via ${t.sentinels.join(",")}`;
  return `cluster via ${t.nodes.join(",")}`;
}

export function splitHostPort(addr: string): { host: string; port: number } {
  const i = addr.lastIndexOf(":");
  return { host: addr.slice(0, i).replace(/^\[(.*)\]$/, "$1"), port: Number(addr.slice(i + 1)) };
}
