// A frozen Redis (SIGSTOP: connections stay open, nothing answers, as a hung node or a partition
// looks): once the breaker has opened, no request waits on Redis (every decision is made locally
// without a Redis call, counted as circuit_open), history is buffered within its bound with the
// overflow counted and logged once, and after SIGCONT a probe closes the breaker and the buffer is
// written. Latency figures of the same scenario are in bench/gateway/redis-frozen.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis } from "../ground/redis.ts";
import { addResources, emptyView, metricValue, type RunningGateway, startGateway, uniqueNamespace } from "./helpers.ts";
import { burst, post, readyz, waitUntil } from "./outage-helpers.ts";

const extractive = { name: "offline", spec: { description: "no provider, no knowledge" } };

describe("frozen Redis", () => {
  const view = emptyView();
  const ns = uniqueNamespace("frozen");
  let keys: Record<string, string>;
  let redis: RedisServer;
  let gw: RunningGateway;

  beforeAll(async () => {
    redis = await startRedis();
    keys = addResources(view, ns, [{ name: "c", agent: "offline", qpm: 1000, keepHistory: true }], [extractive]);
    gw = await startGateway(
      {
        redisUrl: redis.url,
        limiter: { redisTimeoutMs: 300, breakerFailures: 2, breakerProbeMs: 200 },
        history: { retentionSeconds: 3600, bufferEntries: 5, overflowLogIntervalMs: 600_000 },
      },
      { view },
    );
    await waitUntil("first Redis decision", async () => {
      await post(gw.url, keys.c as string);
      return (await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", { backend: "redis" })) > 0;
    });
    await waitUntil(
      "history written",
      async () => (await metricValue(gw.url, "capstan_gateway_history_writes_total", { outcome: "ok" })) > 0,
    );
  });
  afterAll(async () => {
    await gw?.close();
    await redis?.stop();
  });

  it("opens the breaker, then decides without Redis; a probe closes it after SIGCONT", async () => {
    const key = keys.c as string;
    const before = await metricValue(gw.url, "capstan_gateway_history_writes_total", { outcome: "ok" });
    redis.freeze();
    // The first calls wait out the timeout and open the breaker.
    await waitUntil("breaker open", async () => {
      await post(gw.url, key);
      return (await metricValue(gw.url, "capstan_gateway_redis_breaker_state", { state: "closed" })) === 0;
    });
    const timeouts = await metricValue(gw.url, "capstan_gateway_limiter_backend_errors_total", { reason: "timeout" });
    expect(timeouts).toBeGreaterThanOrEqual(2);
    const openedAfter = await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", { backend: "local" });

    // From now on nothing asks Redis: 60 requests, every one decided locally as circuit_open.
    const answers = [...(await burst([gw.url], key, 30)), ...(await burst([gw.url], key, 30))];
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(await metricValue(gw.url, "capstan_gateway_limiter_backend_errors_total", { reason: "circuit_open" })).toBe(
      60,
    );
    expect(await metricValue(gw.url, "capstan_gateway_limiter_backend_errors_total", { reason: "timeout" })).toBe(
      timeouts,
    );
    expect(await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", { backend: "local" })).toBe(
      openedAfter + 60,
    );
    expect(await metricValue(gw.url, "capstan_gateway_redis_breaker_transitions_total", { to: "open" })).toBe(1);
    expect(gw.logs.filter((l) => l.includes("Redis circuit opened"))).toHaveLength(1);

    // History: at most 5 kept; the rest dropped (oldest first), counted, and said once.
    const admitted = openedAfter + 60;
    await waitUntil(
      "history buffered",
      async () => (await metricValue(gw.url, "capstan_gateway_history_buffered")) === 5,
    );
    expect(await metricValue(gw.url, "capstan_gateway_history_buffer_dropped_total")).toBe(admitted - 5);
    expect(gw.logs.filter((l) => l.includes("history buffer full"))).toHaveLength(1);
    const unreadable = await fetch(`${gw.url}/api/v1/history`, { headers: { authorization: `Bearer ${key}` } });
    expect(unreadable.status).toBe(503);
    expect((await unreadable.json()).error.code).toBe("history_unavailable");
    const ready = await readyz(gw.url);
    expect(ready.body.conditions).toContainEqual(expect.objectContaining({ type: "RedisAvailable", status: "False" }));
    expect(ready.body.conditions).toContainEqual(
      expect.objectContaining({ type: "HistoryWritten", reason: "Buffered" }),
    );

    // SIGCONT: a probe answers, the breaker closes, the buffer is written.
    redis.thaw();
    await waitUntil(
      "breaker closed",
      async () => (await metricValue(gw.url, "capstan_gateway_redis_breaker_state", { state: "closed" })) === 1,
    );
    await waitUntil(
      "buffer written",
      async () => (await metricValue(gw.url, "capstan_gateway_history_buffered")) === 0,
    );
    expect(await metricValue(gw.url, "capstan_gateway_history_writes_total", { outcome: "flushed" })).toBe(5);
    const res = await fetch(`${gw.url}/api/v1/history?limit=100`, { headers: { authorization: `Bearer ${key}` } });
    const page = (await res.json()) as { data: Array<{ id: string }> };
    // The 5 buffered exchanges, once each. A write that timed out while Redis was frozen may have
    // run when it thawed (so an exchange dropped from the buffer can be there too), never twice.
    const ids = page.data.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBeGreaterThanOrEqual(before + 5);
    expect(ids.length).toBeLessThanOrEqual(before + 5 + timeouts);
    expect(gw.logs.filter((l) => l.includes("Redis circuit closed"))).toHaveLength(1);
    const after = await post(gw.url, key);
    expect(after.status).toBe(200);
    expect(await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", { backend: "redis" })).toBeGreaterThan(
      1,
    );
  });
});
