import type { LimitDecision } from "@capstan/shared/limiter";
import { describe, expect, it } from "vitest";
import { ShareLimiter } from "./share-limiter.ts";

const W = 60_000;
const redisAnswer = (limit: number, remaining: number): LimitDecision => ({
  allowed: remaining > 0,
  limit,
  remaining,
  resetMs: 1000,
  windowMs: W,
  backend: "redis",
});

describe("ShareLimiter (the local Redis-down policy)", () => {
  it("admits floor(QPM / replicas) per window and frees slots as they age out", () => {
    const share = new ShareLimiter({ windowMs: W, replicas: 3 });
    const admitted = Array.from({ length: 50 }, () => share.check("c", 100, 1000).allowed).filter(Boolean);
    expect(admitted).toHaveLength(33);
    const refused = share.check("c", 100, 2000);
    expect(refused).toMatchObject({ allowed: false, remaining: 0, resetMs: W - 1000, backend: "local" });
    expect(share.check("c", 100, 1000 + W).allowed).toBe(true);
  });

  it("counts its part of the shared count Redis last reported until that count may have left the window", () => {
    const share = new ShareLimiter({ windowMs: W, replicas: 2 });
    // The fleet admitted 80 of 100 through Redis just before the outage: 20 are left, 10 per replica.
    share.observe("c", redisAnswer(100, 20), 5000);
    const admitted = Array.from({ length: 30 }, () => share.check("c", 100, 6000).allowed).filter(Boolean);
    expect(admitted).toHaveLength(10);
    // Once the reported requests must have left the window, the whole share is free again.
    expect(share.check("c", 100, 5000 + W).allowed).toBe(true);
  });

  it("never admits when the share rounds down to zero (QPM below the replica count)", () => {
    const share = new ShareLimiter({ windowMs: W, replicas: 4 });
    const d = share.check("c", 3, 0);
    expect(d.allowed).toBe(false);
    expect(d.resetMs).toBe(W);
  });

  it("peek does not count; record does", () => {
    const share = new ShareLimiter({ windowMs: W, replicas: 1 });
    expect(share.peek("c", 1, 0).allowed).toBe(true);
    expect(share.peek("c", 1, 0).allowed).toBe(true);
    share.record("c", 0);
    expect(share.peek("c", 1, 1).allowed).toBe(false);
  });
});
