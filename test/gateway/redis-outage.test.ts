// The limiter's Redis-down policy on real Redis processes: two gateway replicas sharing a channel
// of QPM 100 while their Redis is stopped for 60 s (at most 100 admitted in total: each replica
// takes floor(100 / 2)), then Redis back (the shared window resumes with no burst: never more than
// 100 in any minute across the transition), and the history of the outage's requests written
// once Redis answers. Long on purpose: the outage and the transition are real minutes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis } from "../ground/redis.ts";
import { addResources, emptyView, metricValue, type RunningGateway, startGateway, uniqueNamespace } from "./helpers.ts";
import { admittedAt, burst, maxInAnyWindow, readyz, waitUntil } from "./outage-helpers.ts";

const WINDOW_MS = 60_000;
const extractive = { name: "offline", spec: { description: "no provider, no knowledge" } };

describe("two replicas, QPM 100, Redis stopped for 60 s", () => {
  const view = emptyView();
  const ns = uniqueNamespace("outage");
  let keys: Record<string, string>;
  let redis: RedisServer;
  let a: RunningGateway;
  let b: RunningGateway;

  beforeAll(async () => {
    redis = await startRedis();
    keys = addResources(
      view,
      ns,
      [
        { name: "limited", agent: "offline", qpm: 100, keepHistory: true },
        { name: "warmup", agent: "offline", qpm: 1000 },
      ],
      [extractive],
    );
    const config = {
      redisUrl: redis.url,
      limiter: { replicas: 2, redisTimeoutMs: 500, breakerFailures: 2, breakerProbeMs: 200 },
      history: { retentionSeconds: 3600 },
    };
    a = await startGateway(config, { view });
    b = await startGateway(config, { view });
    for (const gw of [a, b]) {
      await waitUntil("first Redis decision", async () => {
        await burst([gw.url], keys.warmup as string, 1);
        return (await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", { backend: "redis" })) > 0;
      });
    }
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await redis?.stop();
  });

  it("admits at most QPM in total during the outage and in the minute after Redis returns", async () => {
    const key = keys.limited as string;
    const urls = [a.url, b.url];
    const port = redis.port;
    const t0 = Date.now();
    const at = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, t0 + ms - Date.now())));
    await redis.stop();

    // The first calls fail and open each replica's breaker: one warning line each, the mode in
    // metrics and readiness (which stays 200: the policy serves, the replica stays in rotation).
    await burst(urls, keys.warmup as string, 6);
    for (const gw of [a, b]) {
      expect(await metricValue(gw.url, "capstan_gateway_redis_breaker_state", { state: "closed" })).toBe(0);
      expect(await metricValue(gw.url, "capstan_gateway_limiter_mode", { mode: "fallback" })).toBe(1);
      expect(gw.logs.filter((l) => l.includes("Redis circuit opened"))).toHaveLength(1);
      const ready = await readyz(gw.url);
      expect(ready.status).toBe(200);
      expect(ready.body.conditions).toContainEqual(
        expect.objectContaining({ type: "LimiterShared", status: "False", reason: "RedisUnavailable" }),
      );
    }

    // Bounded bursts in the outage: each replica admits its share, floor(100 / 2), no more.
    await at(45_000);
    const first = await burst(urls, key, 200);
    await at(55_000);
    const second = await burst(urls, key, 100);
    const outage = [...first, ...second];
    expect(outage.filter((r) => r.status === 200)).toHaveLength(100);
    expect(second.filter((r) => r.status === 200)).toHaveLength(0);
    for (const gw of [a, b]) {
      const limited = { backend: "local", result: "allowed" };
      // 3 warm-up requests each plus the share of the limited channel.
      expect(await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", limited)).toBe(3 + 50);
      expect(gw.logs.filter((l) => l.includes("history cannot be written"))).toHaveLength(1);
      expect(gw.logs.filter((l) => l.includes("history write failed"))).toHaveLength(0);
    }

    // Redis back after 60 s, empty (no persistence): the replicas' probes close their breakers.
    await at(60_000);
    redis = await startRedis({ port });
    for (const gw of [a, b]) {
      await waitUntil(
        "breaker closed",
        async () => (await metricValue(gw.url, "capstan_gateway_redis_breaker_state", { state: "closed" })) === 1,
      );
      expect(gw.logs.filter((l) => l.includes("Redis circuit closed"))).toHaveLength(1);
      expect(await metricValue(gw.url, "capstan_gateway_limiter_mode", { mode: "recovering" })).toBe(1);
    }
    // The shared log is empty, but what the replicas admitted locally at 45 s is in the window
    // until 105 s: nothing more is admitted before it leaves (no burst on recovery).
    const transition = await burst(urls, key, 100);
    const stillInWindow = Math.min(...admittedAt(outage)) + WINDOW_MS;
    const decidedBefore = transition.filter((r) => r.at < stillInWindow);
    expect(decidedBefore.length).toBe(transition.length); // recovery took well under 45 s
    expect(decidedBefore.filter((r) => r.status === 200)).toHaveLength(0);

    // The history of the outage's admitted requests, written from the buffers.
    for (const gw of [a, b]) {
      await waitUntil(
        "history buffer written",
        async () => (await metricValue(gw.url, "capstan_gateway_history_buffered")) === 0,
      );
      expect(await metricValue(gw.url, "capstan_gateway_history_writes_total", { outcome: "flushed" })).toBe(50);
      expect(await metricValue(gw.url, "capstan_gateway_history_buffer_dropped_total")).toBe(0);
    }
    expect(await historyCount(a.url, key)).toBe(100);

    // Once the outage's admissions have left the window the fleet admits QPM again, exactly.
    const lastAnswer = Math.max(...outage.filter((r) => r.status === 200).map((r) => r.at));
    await new Promise((r) => setTimeout(r, Math.max(0, lastAnswer + WINDOW_MS + 500 - Date.now())));
    const after = await burst(urls, key, 150);
    expect(after.filter((r) => r.status === 200)).toHaveLength(100);
    expect(maxInAnyWindow(admittedAt([...outage, ...transition, ...after]), WINDOW_MS)).toBeLessThanOrEqual(100);
  }, 240_000);
});

async function historyCount(url: string, key: string): Promise<number> {
  let count = 0;
  let before = "";
  for (;;) {
    const res = await fetch(`${url}/api/v1/history?limit=100${before}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const body = (await res.json()) as { data: Array<{ cursor: string; status: number }>; has_more: boolean };
    count += body.data.filter((e) => e.status === 200).length;
    if (!body.has_more) return count;
    before = `&before=${body.data.at(-1)?.cursor}`;
  }
}
