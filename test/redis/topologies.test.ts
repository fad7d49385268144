// The gateway and search's limiter on the two replicated Redis topologies, each real and with a
// password (as a Secret would give it): a three-master Redis Cluster with one replica per master,
// and a Sentinel group (one master, two replicas, three sentinels). On each: the QPM limiter is
// exact across two gateway instances, history is written (a two-key script) and read back, and
// search's per-key limiter counts; the password never appears in a log line. On the cluster every
// multi-key operation must keep its keys in one hash slot, or Redis refuses it (CROSSSLOT): the
// channels below are chosen so their keys land on all three masters.
import { RedisLimiter } from "@capstan/shared/limiter";
import { createRedisClient, type RedisTopology, redisTarget, redisTopologySchema } from "@capstan/shared/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addResources, emptyView, type RunningGateway, startGateway, uniqueNamespace } from "../gateway/helpers.ts";
import {
  type RedisClusterGround,
  type RedisSentinelGround,
  startRedisCluster,
  startRedisSentinel,
} from "../ground/redis-topologies.ts";
import { post, quietLogger } from "./helpers.ts";
import { startGatewayProcess } from "./process.ts";

const PASSWORD = `pw-${Math.random().toString(36).slice(2)}-secret`;
const extractive = { name: "offline", spec: { description: "no provider, no knowledge" } };

let cluster: RedisClusterGround;
let sentinel: RedisSentinelGround;

beforeAll(async () => {
  [cluster, sentinel] = await Promise.all([
    startRedisCluster({ password: PASSWORD }),
    startRedisSentinel({ password: PASSWORD }),
  ]);
});
afterAll(async () => {
  await Promise.allSettled([cluster?.stop(), sentinel?.stop()]);
});

/** The variables the operator renders for each topology (password from a Secret). */
const envOf: Record<string, () => Record<string, string>> = {
  cluster: () => ({ REDIS_MODE: "cluster", REDIS_CLUSTER_NODES: cluster.nodes.join(","), REDIS_PASSWORD: PASSWORD }),
  sentinel: () => ({
    REDIS_MODE: "sentinel",
    REDIS_SENTINELS: sentinel.sentinels.join(","),
    REDIS_SENTINEL_MASTER: sentinel.masterName,
    REDIS_PASSWORD: PASSWORD,
  }),
};

const topologies: Array<[string, () => RedisTopology]> = [
  ["cluster", () => redisTopologySchema.parse({ mode: "cluster", nodes: cluster.nodes, password: PASSWORD })],
  [
    "sentinel",
    () =>
      redisTopologySchema.parse({
        mode: "sentinel",
        sentinels: sentinel.sentinels,
        masterName: sentinel.masterName,
        password: PASSWORD,
      }),
  ],
];

describe.each(topologies)("Redis %s", (mode, topology) => {
  const view = emptyView();
  const ns = uniqueNamespace(`topo-${mode}`);
  // Enough channels that, hashed, they cover every master of the cluster.
  const names = Array.from({ length: 12 }, (_, i) => `ch-${i}`);
  let keys: Record<string, string>;
  let a: RunningGateway;
  let b: RunningGateway;

  beforeAll(async () => {
    keys = addResources(
      view,
      ns,
      names.map((name) => ({ name, agent: "offline", qpm: 5, keepHistory: true })),
      [extractive],
    );
    const config = { redis: topology(), limiter: { redisTimeoutMs: 10_000 }, history: { retentionSeconds: 3600 } };
    a = await startGateway(config, { view });
    b = await startGateway(config, { view });
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  it("holds every channel's QPM exactly across two gateways, and stores and reads history", async () => {
    if (mode === "cluster") {
      // The channels' keys really are spread over the three masters.
      const masters = new Set<number>();
      for (const name of names) masters.add((await cluster.masterOf(`capstan:history:${ns}/${name}`)).port);
      expect(masters.size).toBe(3);
    }
    for (const name of names) {
      const key = keys[name] as string;
      // 8 requests against QPM 5, alternating between the two gateways: exactly 5 admitted.
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        const res = await post(i % 2 === 0 ? a.url : b.url, key);
        await res.arrayBuffer();
        statuses.push(res.status);
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(5);
      expect(statuses.filter((s) => s === 429)).toHaveLength(3);
    }
    // History: each admitted exchange is written by the two-key append script (a 429 is not).
    for (const name of names) {
      const key = keys[name] as string;
      let data: Array<{ channel: string; status: number }> = [];
      for (let i = 0; i < 100 && data.length < 5; i++) {
        const res = await fetch(`${a.url}/api/v1/history?limit=100`, { headers: { authorization: `Bearer ${key}` } });
        data = ((await res.json()) as { data: typeof data }).data;
        if (data.length < 5) await new Promise((r) => setTimeout(r, 50));
      }
      expect(data.map((e) => e.status)).toEqual([200, 200, 200, 200, 200]);
      expect(data.every((e) => e.channel === `${ns}/${name}`)).toBe(true);
    }
    for (const gw of [a, b]) {
      const logs = gw.logs.join("\n");
      expect(logs).toContain(mode === "cluster" ? "cluster via 127.0.0.1:" : "sentinel master");
      expect(logs).not.toContain(PASSWORD);
      expect(logs).not.toContain("CROSSSLOT");
    }
  });

  it("the gateway process takes the topology from its environment, and never prints the password", async () => {
    const gw = await startGatewayProcess({ ...(envOf[mode]?.() ?? {}), LOG_LEVEL: "info" }, `env-${mode}`, 2);
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await post(gw.url, gw.key);
        await res.arrayBuffer();
        statuses.push(res.status);
      }
      expect(statuses).toEqual([200, 200, 429]);
      const ready = (await (await fetch(`${gw.internalUrl}/readyz`)).json()) as {
        conditions: Array<{ type: string; status: string }>;
      };
      expect(ready.conditions.find((c) => c.type === "LimiterShared")?.status).toBe("True");
      expect(gw.proc.output()).toContain(mode === "cluster" ? "cluster via 127.0.0.1:" : "sentinel master");
      expect(gw.proc.output()).not.toContain(PASSWORD);
    } finally {
      await gw.stop();
    }
  });

  it("search's per-key limiter counts on the same topology", async () => {
    const target = redisTarget(undefined, topology());
    if (!target) throw new Error("no target");
    const logs: string[] = [];
    const redis = createRedisClient(target, quietLogger(logs));
    try {
      const limiter = new RedisLimiter(redis, { windowMs: 60_000, keyPrefix: "capstan:search-rl:" });
      expect(await limiter.waitReady(10_000)).toBe(true);
      const subject = `${ns}/search-key`;
      const allowed = [];
      for (let i = 0; i < 4; i++) allowed.push((await limiter.check(subject, 3)).allowed);
      expect(allowed).toEqual([true, true, true, false]);
    } finally {
      redis.disconnect();
    }
    expect(logs.join("\n")).not.toContain(PASSWORD);
  });
});
