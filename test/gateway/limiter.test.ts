// The QPM limiter on a real Redis: exact across two gateway instances sharing it, 429 as the SDK's
// RateLimitError with Retry-After and the rate-limit headers, and the Redis-down policy (in-process
// limiter per replica, visible in metrics and logs) by killing a private Redis, then recovery.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startRedis } from "../ground/redis.ts";
import {
  addResources,
  client,
  emptyView,
  metricValue,
  type RunningGateway,
  startGateway,
  uniqueNamespace,
} from "./helpers.ts";

const extractive = { name: "offline", spec: { description: "no provider, no knowledge" } };
const body = { model: "m", messages: [{ role: "user" as const, content: "hi" }] };

function post(url: string, key: string): Promise<Response> {
  return fetch(`${url}/api/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

describe("QPM limiter shared through Redis", () => {
  const view = emptyView();
  const ns = uniqueNamespace("rl");
  let keys: Record<string, string>;
  let a: RunningGateway;
  let b: RunningGateway;

  beforeAll(async () => {
    keys = addResources(
      view,
      ns,
      [
        { name: "burst", agent: "offline", qpm: 100 },
        { name: "small", agent: "offline", qpm: 2 },
        { name: "warmup", agent: "offline", qpm: 1000 },
      ],
      [extractive],
    );
    const redisUrl = inject("redisUrl");
    // A generous Redis timeout: on a loaded machine a slow answer must not send a request to the
    // per-replica fallback, which would make the count depend on timing.
    a = await startGateway({ redisUrl, limiter: { redisTimeoutMs: 10_000 } }, { view });
    b = await startGateway({ redisUrl, limiter: { redisTimeoutMs: 10_000 } }, { view });
    for (const gw of [a, b]) {
      const r = await post(gw.url, keys.warmup as string);
      await r.arrayBuffer();
      expect(await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", { backend: "redis" })).toBe(1);
    }
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  it("accepts exactly QPM of a burst of three times QPM spread over two instances", async () => {
    const key = keys.burst as string;
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        post(i % 2 === 0 ? a.url : b.url, key).then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        }),
      ),
    );
    expect(results.filter((s) => s === 200)).toHaveLength(100);
    expect(results.filter((s) => s === 429)).toHaveLength(200);
    // Both instances served part of the quota: the log really is shared.
    const servedA = await metricValue(a.url, "capstan_gateway_limiter_decisions_total", {
      backend: "redis",
      result: "allowed",
    });
    const servedB = await metricValue(b.url, "capstan_gateway_limiter_decisions_total", {
      backend: "redis",
      result: "allowed",
    });
    expect(servedA + servedB).toBe(2 + 100); // the two warm-up requests, then exactly QPM
    expect(await metricValue(a.url, "capstan_gateway_limiter_decisions_total", { backend: "local" })).toBe(0);
    expect(await metricValue(b.url, "capstan_gateway_limiter_decisions_total", { backend: "local" })).toBe(0);
    expect(servedA).toBeGreaterThan(0);
    expect(servedB).toBeGreaterThan(0);
  });

  it("surfaces 429 as RateLimitError with Retry-After and the x-ratelimit / RateLimit fields", async () => {
    const key = keys.small as string;
    const first = await post(a.url, key);
    expect(first.status).toBe(200);
    expect(first.headers.get("x-ratelimit-limit-requests")).toBe("2");
    expect(first.headers.get("x-ratelimit-remaining-requests")).toBe("1");
    expect(first.headers.get("ratelimit-policy")).toBe('"qpm";q=2;w=60');
    expect(first.headers.get("ratelimit")).toMatch(/^"qpm";r=1;t=\d+$/);
    await first.arrayBuffer();
    const sdk = client(b.url, key);
    const second = await sdk.chat.completions.create(body);
    expect(second.object).toBe("chat.completion");
    const err = await sdk.chat.completions.create(body).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.status).toBe(429);
    expect(err.code).toBe("rate_limit_exceeded");
    const retryAfter = Number(err.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(err.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(err.headers.get("x-ratelimit-reset-requests")).toMatch(/^(\d+ms|[\d.]+s|\d+m\d+s)$/);
    expect(err.headers.get("ratelimit")).toBe(`"qpm";r=0;t=${retryAfter}`);
    expect(await metricValue(b.url, "capstan_gateway_limiter_rejections_total", { channel: `${ns}/small` })).toBe(1);
  });
});

describe("Redis-down policy", () => {
  it("keeps serving with an in-process limiter per replica while Redis is down, then returns to Redis", async () => {
    const redis = await startRedis();
    const view = emptyView();
    const ns = uniqueNamespace("down");
    const keys = addResources(
      view,
      ns,
      [
        { name: "c", agent: "offline", qpm: 3 },
        { name: "fresh", agent: "offline", qpm: 3 },
      ],
      [extractive],
    );
    const gw = await startGateway(
      { redisUrl: redis.url, limiter: { redisTimeoutMs: 500, breakerFailures: 1, breakerProbeMs: 100 } },
      { view },
    );
    let port = redis.port;
    try {
      // Wait for the connection, then spend one request through Redis.
      for (
        let i = 0;
        i < 100 && (await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", { backend: "redis" })) === 0;
        i++
      ) {
        const r = await post(gw.url, keys.c as string);
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`unexpected ${r.status}`);
        if ((await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", { backend: "redis" })) > 0) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      expect(
        await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", { backend: "redis" }),
      ).toBeGreaterThan(0);
      port = redis.port;
      await redis.stop();

      // Redis is gone: requests still succeed, limited by the replica's share (one replica: the
      // whole qpm of 3), and the request Redis admitted in this window still counts.
      const redisAdmitted = await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", { backend: "redis" });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await post(gw.url, keys.c as string);
        await r.arrayBuffer();
        statuses.push(r.status);
      }
      const left = 3 - redisAdmitted;
      expect(statuses).toEqual([...Array(left).fill(200), ...Array(5 - left).fill(429)]);
      expect(await metricValue(gw.url, "capstan_gateway_limiter_degraded")).toBe(1);
      expect(await metricValue(gw.url, "capstan_gateway_limiter_backend_errors_total")).toBe(5);
      expect(await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", { backend: "local" })).toBe(5);
      const warned = gw.logs.filter((l) => l.includes("Redis circuit opened"));
      expect(warned).toHaveLength(1); // logged once per change of state, not per request

      // Redis comes back on the same port: the gateway reconnects and uses it again.
      const again = await startRedis({ port });
      try {
        // The breaker's probe finds it; the channel's share is spent, so the next request is
        // refused by the share before Redis is asked (the recovery window), a fresh channel's goes to Redis.
        for (let i = 0; i < 100; i++) {
          if ((await metricValue(gw.url, "capstan_gateway_redis_breaker_state", { state: "closed" })) === 1) break;
          await new Promise((res) => setTimeout(res, 100));
        }
        expect(await metricValue(gw.url, "capstan_gateway_redis_breaker_state", { state: "closed" })).toBe(1);
        const spent = await post(gw.url, keys.c as string);
        expect(spent.status).toBe(429);
        const fresh = await post(gw.url, keys.fresh as string);
        expect(fresh.status).toBe(200);
        expect(fresh.headers.get("x-ratelimit-remaining-requests")).toBe("2");
        expect(await metricValue(gw.url, "capstan_gateway_limiter_decisions_total", { backend: "redis" })).toBe(
          redisAdmitted + 1,
        );
        // For one window the replica's share still applies beside Redis (no burst on recovery).
        expect(await metricValue(gw.url, "capstan_gateway_limiter_mode", { mode: "recovering" })).toBe(1);
        expect(gw.logs.filter((l) => l.includes("Redis circuit closed"))).toHaveLength(1);
      } finally {
        await again.stop();
      }
    } finally {
      await gw.close();
      await redis.stop();
    }
  });

  it("answers 503 under the deny policy while Redis is down", async () => {
    const redis = await startRedis();
    const view = emptyView();
    const keys = addResources(view, uniqueNamespace("deny"), [{ name: "c", agent: "offline" }], [extractive]);
    const gw = await startGateway({ redisUrl: redis.url, limiter: { redisDownPolicy: "deny" } }, { view });
    try {
      await redis.stop();
      const r = await post(gw.url, keys.c as string);
      expect(r.status).toBe(503);
      expect((await r.json()).error.code).toBe("limiter_unavailable");
    } finally {
      await gw.close();
    }
  });
});
