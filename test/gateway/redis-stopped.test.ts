// A stopped Redis (connections refused, as when its pod is gone): the breaker opens after its
// consecutive failures and the limiter reports itself degraded, even while usage writes go on in
// the background. ioredis answers a pipeline to a dead server with the errors inside its results
// rather than a rejection; the usage buffer once took that for success every second, which reset
// the breaker's count, so the breaker never opened and CapstanLimiterBackendDown never fired.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis } from "../ground/redis.ts";
import { addResources, emptyView, metricValue, type RunningGateway, startGateway, uniqueNamespace } from "./helpers.ts";
import { post, waitUntil } from "./outage-helpers.ts";

const extractive = { name: "offline", spec: { description: "no provider, no knowledge" } };

describe("stopped Redis", () => {
  const view = emptyView();
  const ns = uniqueNamespace("stopped");
  let keys: Record<string, string>;
  let redis: RedisServer;
  let gw: RunningGateway;

  beforeAll(async () => {
    redis = await startRedis();
    keys = addResources(view, ns, [{ name: "c", agent: "offline", qpm: 1000 }], [extractive]);
    gw = await startGateway(
      { redisUrl: redis.url, limiter: { redisTimeoutMs: 500, breakerFailures: 3, breakerProbeMs: 60_000 } },
      { view },
    );
    await waitUntil("first Redis decision", async () => {
      await post(gw.url, keys.c as string);
      return (await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", { backend: "redis" })) > 0;
    });
  });
  afterAll(async () => {
    await gw?.close();
    await redis?.stop();
  });

  it("opens the breaker within its failure count, with usage flushed between the requests", async () => {
    await redis.stop();
    // One request every 1.2 s: the usage buffer flushes (every second) between any two of them.
    let sent = 0;
    for (; sent < 8; sent++) {
      expect((await post(gw.url, keys.c as string)).status).toBe(200);
      if ((await metricValue(gw.url, "capstan_gateway_redis_breaker_state", { state: "open" })) === 1) break;
      await new Promise((r) => setTimeout(r, 1_200));
    }
    expect(await metricValue(gw.url, "capstan_gateway_redis_breaker_state", { state: "open" })).toBe(1);
    expect(sent).toBeLessThan(4);
    expect(await metricValue(gw.url, "capstan_gateway_limiter_degraded", {})).toBe(1);
    expect(await metricValue(gw.url, "capstan_gateway_usage_writes_total", { outcome: "dropped" })).toBeGreaterThan(0);
  }, 60_000);
});
