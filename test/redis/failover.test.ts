// A Redis master killed (SIGKILL) while two gateways take a steady load on one channel whose QPM
// binds: once on a Sentinel group (the sentinels promote a replica), once on a Redis Cluster (the
// dead master's replica takes over its slots). What must hold, with the figures printed for
// docs/benchmarks.md ("Redis failover"):
// - no 5xx and no unanswered request: while the gateways cannot reach Redis they decide with the
//   Redis-down policy (local: each replica admits its share), so the error window is 0;
// - admitted requests in any window stay within the channel's QPM plus OVERSHOOT_BOUND: what the
//   new master lacks (writes the old one had not yet replicated when it died) can be admitted again;
// - the gateways decide through Redis again within RECOVERY_BOUND_MS of the kill.
// Run: npm exec -- vitest run --project integration test/redis/failover.test.ts
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addResources, emptyView, type RunningGateway, startGateway, uniqueNamespace } from "../gateway/helpers.ts";
import { type RedisNode, startRedisCluster, startRedisSentinel } from "../ground/redis-topologies.ts";
import { errorWindow, maxAdmittedInWindow, runLoad, watchModes } from "./load.ts";

const WINDOW_MS = 10_000;
const QPM = 60; // per 10 s window here; the load offers several times that
/** Admissions beyond the QPM a failover may cause (documented in docs/gateway.md). */
const OVERSHOOT_BOUND = 5;
const RECOVERY_BOUND_MS = 15_000;
const PASSWORD = `pw-${Math.random().toString(36).slice(2)}`;
const extractive = { name: "offline", spec: { description: "no provider, no knowledge" } };

interface Ground {
  redis: Record<string, unknown>;
  /** The master holding the channel's limiter key now. */
  masterFor(key: string): Promise<RedisNode>;
  stop(): Promise<void>;
}

const grounds: Array<[string, () => Promise<Ground>]> = [
  [
    "Sentinel",
    async () => {
      const g = await startRedisSentinel({ password: PASSWORD });
      return {
        redis: { mode: "sentinel", sentinels: g.sentinels, masterName: g.masterName, password: PASSWORD },
        masterFor: () => g.master(),
        stop: () => g.stop(),
      };
    },
  ],
  [
    "Cluster",
    async () => {
      const g = await startRedisCluster({ password: PASSWORD });
      return {
        redis: { mode: "cluster", nodes: g.nodes, password: PASSWORD },
        masterFor: (key) => g.masterOf(key),
        stop: () => g.stop(),
      };
    },
  ],
];

describe.each(grounds)("Redis %s failover under load", (topology, start) => {
  let ground: Ground;
  let gateways: RunningGateway[] = [];
  const view = emptyView();
  const ns = uniqueNamespace(`fo-${topology.toLowerCase()}`);
  let key: string;

  beforeAll(async () => {
    ground = await start();
    key = addResources(view, ns, [{ name: "busy", agent: "offline", qpm: QPM }], [extractive]).busy as string;
    const config = {
      redis: ground.redis,
      limiter: { windowMs: WINDOW_MS, replicas: 2 },
    } as const;
    gateways = [await startGateway(config, { view }), await startGateway(config, { view })];
  });
  afterAll(async () => {
    await Promise.allSettled(gateways.map((g) => g.close()));
    await ground?.stop();
  });

  it("answers every request (no 5xx), holds the QPM within the bound, and decides through Redis again", async () => {
    const master = await ground.masterFor(`capstan:rl:${ns}/busy`);
    const watch = watchModes(gateways.map((g) => g.internalUrl));
    const { samples, faultAt } = await runLoad({
      urls: gateways.map((g) => g.url),
      key,
      durationMs: 22_000,
      workers: 4,
      pauseMs: 40,
      fault: { atMs: 6_000, run: () => master.kill() },
    });
    const fallbackMs = await watch.stop();
    const errors = errorWindow(samples);
    const admitted = maxAdmittedInWindow(samples, WINDOW_MS);
    const after = samples.filter((s) => s.start > faultAt + RECOVERY_BOUND_MS);
    const figures = {
      topology,
      requests: samples.length,
      perSecond: Math.round(samples.length / 22),
      admitted: samples.filter((s) => s.status === 200).length,
      errors5xx: errors.count,
      errorWindowMs: errors.spanMs,
      maxAdmittedInWindow: admitted,
      qpm: QPM,
      overshoot: Math.max(0, admitted - QPM),
      breakerOpenMs: fallbackMs,
      slowestMs: Math.max(...samples.map((x) => x.end - x.start)),
    };
    console.log(`[redis failover] ${JSON.stringify(figures)}`);
    expect(samples.length).toBeGreaterThan(200);
    expect(errors).toEqual({ count: 0, spanMs: 0 });
    expect(samples.every((s) => s.status === 200 || s.status === 429)).toBe(true);
    expect(admitted).toBeLessThanOrEqual(QPM + OVERSHOOT_BOUND);
    for (const ms of fallbackMs) expect(ms).toBeLessThan(RECOVERY_BOUND_MS);
    // Requests after recovery were still limited (the limit binds: the load offers more than QPM).
    expect(after.some((s) => s.status === 429)).toBe(true);
    for (const g of gateways) expect(g.logs.join("\n")).not.toContain(PASSWORD);
  });
});
