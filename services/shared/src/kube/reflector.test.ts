import { KubeConfig, Watch } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { fullJitterBackoff, setWatchInactivityTimeout } from "./reflector.ts";

describe("fullJitterBackoff", () => {
  it("is uniform in [0, min(max, base·2^attempt))", () => {
    expect(fullJitterBackoff(1, 800, 30_000, () => 0)).toBe(0);
    expect(fullJitterBackoff(1, 800, 30_000, () => 0.999999)).toBe(1599);
    expect(fullJitterBackoff(3, 800, 30_000, () => 0.5)).toBe(3200);
    expect(fullJitterBackoff(10, 800, 30_000, () => 0.999999)).toBe(29_999);
    expect(fullJitterBackoff(10_000, 800, 30_000, () => 0.5)).toBe(15_000);
  });
  it("spreads many reconnects instead of synchronising them", () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const delays = Array.from({ length: 1000 }, () => fullJitterBackoff(5, 800, 30_000, random));
    expect(Math.min(...delays)).toBeLessThan(1000);
    expect(Math.max(...delays)).toBeGreaterThan(24_000);
    expect(new Set(delays).size).toBeGreaterThan(900);
  });
});

describe("the watch's inactivity timeout", () => {
  it("is the field client-node's Watch reads (an upgrade that renames it fails here)", () => {
    const watch = new Watch(new KubeConfig());
    expect(watch).toHaveProperty("requestTimeoutMs", 30_000);
    setWatchInactivityTimeout(watch, 630_000);
    expect(watch).toHaveProperty("requestTimeoutMs", 630_000);
  });
});
