import { describe, expect, it } from "vitest";
import { formatDuration, type LimitDecision, rateLimitHeaders, retryAfterSeconds } from "./decision.ts";
import { MemoryLimiter } from "./memory-limiter.ts";

describe("MemoryLimiter (sliding log)", () => {
  it("accepts exactly the limit in a window and frees slots as requests age out", () => {
    let now = 1_000_000;
    const limiter = new MemoryLimiter({ windowMs: 60_000, now: () => now });
    const results = Array.from({ length: 10 }, () => limiter.check("c", 3).allowed);
    expect(results.filter(Boolean)).toHaveLength(3);
    const rejected = limiter.check("c", 3);
    expect(rejected).toMatchObject({ allowed: false, remaining: 0, resetMs: 60_000 });
    now += 59_999;
    expect(limiter.check("c", 3).allowed).toBe(false);
    now += 1;
    const again = limiter.check("c", 3);
    expect(again.allowed).toBe(true);
    expect(again.remaining).toBe(2); // all three aged out together; this one takes a slot
  });

  it("keeps channels apart", () => {
    const limiter = new MemoryLimiter({ windowMs: 60_000 });
    expect(limiter.check("a", 1).allowed).toBe(true);
    expect(limiter.check("a", 1).allowed).toBe(false);
    expect(limiter.check("b", 1).allowed).toBe(true);
  });

  it("never lets more than the limit through in any window of a steady stream", () => {
    let now = 0;
    const limiter = new MemoryLimiter({ windowMs: 1000, now: () => now });
    const accepted: number[] = [];
    for (let t = 0; t < 10_000; t += 7) {
      now = t;
      if (limiter.check("c", 10).allowed) accepted.push(t);
    }
    for (let i = 10; i < accepted.length; i++) {
      expect((accepted[i] as number) - (accepted[i - 10] as number)).toBeGreaterThanOrEqual(1000);
    }
  });
});

describe("rate-limit headers", () => {
  const d: LimitDecision = {
    allowed: false,
    limit: 100,
    remaining: 0,
    resetMs: 12_300,
    windowMs: 60_000,
    backend: "redis",
  };

  it("writes the OpenAI and IETF fields and Retry-After on rejection", () => {
    expect(rateLimitHeaders(d)).toEqual({
      "x-ratelimit-limit-requests": "100",
      "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-reset-requests": "12.3s",
      "ratelimit-policy": '"qpm";q=100;w=60',
      ratelimit: '"qpm";r=0;t=13',
      "retry-after": "13",
    });
    expect(rateLimitHeaders({ ...d, allowed: true, remaining: 5 })).not.toHaveProperty("retry-after");
  });

  it("never asks for an immediate retry", () => {
    expect(retryAfterSeconds({ ...d, resetMs: 0 })).toBe(1);
  });

  it("sends nothing when no limiter decided (fail-open policy)", () => {
    expect(rateLimitHeaders({ ...d, backend: "none" })).toEqual({});
  });

  it("formats durations like OpenAI", () => {
    expect(formatDuration(20)).toBe("20ms");
    expect(formatDuration(1500)).toBe("1.5s");
    expect(formatDuration(360_000)).toBe("6m0s");
    expect(formatDuration(-5)).toBe("0ms");
  });
});
