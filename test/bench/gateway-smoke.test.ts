// Smoke runs of the gateway benchmarks (bench/gateway): each in its smoke mode with its own Redis,
// the fake provider and gateway processes as deployed, checking its own work (bench/work.ts):
// every answer a completion, one provider call per answer, the limiters' decisions adding up.
// No timing is asserted.
import { describe, expect, it } from "vitest";
import { smoke } from "./run-bench.ts";

describe("gateway benchmarks, smoke mode", () => {
  it("latency: every probe and load request answered with a completion the provider was called for", async () => {
    expect(await smoke("bench/gateway/latency.ts", [], { timeoutMs: 120_000 })).toMatch(/ratio +\d/);
  });

  it("fallback: three upstreams, the first's breaker open: every probe answered, one breaker skip each", async () => {
    expect(await smoke("bench/gateway/fallback.ts", [], { timeoutMs: 120_000 })).toMatch(/three, first open +p50/);
  });

  it("limiter-accuracy: exactly QPM accepted across the replicas", async () => {
    expect(await smoke("bench/gateway/limiter-accuracy.ts", [], { timeoutMs: 120_000 })).toMatch(/^ {2}EXACT: /m);
  });

  it("redis-frozen: the breaker opens and every request is still answered", async () => {
    expect(await smoke("bench/gateway/redis-frozen.ts", [], { timeoutMs: 120_000 })).toMatch(/breaker opened/);
  });

  it("tracing: every configuration answered with completions, every-request sampling reaching the OTLP sink", async () => {
    expect(await smoke("bench/gateway/tracing.ts", [], { timeoutMs: 180_000 })).toMatch(/OTLP sink: [1-9]\d* export/);
  });

  it("redis-ops: Redis commands and CPU per request, every request answered and counted in Redis", async () => {
    expect(await smoke("bench/gateway/redis-ops.ts", [], { timeoutMs: 120_000 })).toMatch(
      /round trips to Redis per request: 1\.00/,
    );
  });

  it("profile: the gateway's own code is in the profile of answered requests", async () => {
    expect(await smoke("bench/gateway/profile.ts", [], { timeoutMs: 120_000 })).toMatch(/self time by package/);
  });
});
