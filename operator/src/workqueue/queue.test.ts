import { createRegistry } from "@capstan/shared";
import { afterEach, describe, expect, it, vi } from "vitest";
import { queueMetrics, WorkQueue } from "./queue.ts";
import { BucketRateLimiter, defaultControllerRateLimiter, ItemExponentialFailureRateLimiter } from "./rate-limiter.ts";

function newQueue(): WorkQueue {
  return new WorkQueue({ name: "test", rateLimiter: new ItemExponentialFailureRateLimiter(5, 1_000_000) });
}

afterEach(() => {
  vi.useRealTimers();
});

describe("ItemExponentialFailureRateLimiter", () => {
  it("doubles from 5 ms per failure up to 1000 s, per item, and forget() resets", () => {
    const rl = new ItemExponentialFailureRateLimiter(5, 1_000_000);
    const delays = Array.from({ length: 20 }, () => rl.when("a"));
    expect(delays.slice(0, 5)).toEqual([5, 10, 20, 40, 80]);
    expect(delays[17]).toBe(5 * 2 ** 17);
    expect(delays[18]).toBe(1_000_000);
    expect(delays[19]).toBe(1_000_000);
    expect(rl.when("b")).toBe(5);
    expect(rl.numRequeues("a")).toBe(20);
    rl.forget("a");
    expect(rl.numRequeues("a")).toBe(0);
    expect(rl.when("a")).toBe(5);
  });

  it("never overflows after many failures", () => {
    const rl = new ItemExponentialFailureRateLimiter(5, 1_000_000);
    for (let i = 0; i < 5000; i++) rl.when("x");
    expect(rl.when("x")).toBe(1_000_000);
  });
});

describe("BucketRateLimiter", () => {
  it("lets a burst through, then spaces items at the rate", () => {
    let now = 0;
    const rl = new BucketRateLimiter(10, 100, () => now);
    const first = Array.from({ length: 100 }, (_, i) => rl.when(`i${i}`));
    expect(first.every((d) => d === 0)).toBe(true);
    expect(rl.when("x")).toBe(100);
    expect(rl.when("y")).toBe(200);
    now = 10_000; // refilled
    expect(rl.when("z")).toBe(0);
  });

  it("is combined with the per-item limiter by maximum (client-go default)", () => {
    const rl = defaultControllerRateLimiter();
    expect(rl.when("a")).toBe(5);
    expect(rl.when("a")).toBe(10);
    expect(rl.numRequeues("a")).toBe(2);
  });
});

describe("WorkQueue", () => {
  it("dedupes adds of a queued item", async () => {
    const q = newQueue();
    q.add("a");
    q.add("b");
    q.add("a");
    expect(q.length).toBe(2);
    expect(await q.get()).toBe("a");
    expect(await q.get()).toBe("b");
    expect(q.length).toBe(0);
  });

  it("never hands an item being processed to another worker; re-queues it on done()", async () => {
    const q = newQueue();
    q.add("a");
    const item = await q.get();
    q.add("a");
    q.add("a");
    expect(q.length).toBe(0);
    let second: string | undefined;
    void q.get().then((i) => {
      second = i;
    });
    await Promise.resolve();
    expect(second).toBeUndefined();
    q.done(item as string);
    await Promise.resolve();
    expect(second).toBe("a");
  });

  it("a waiting worker gets an added item at once", async () => {
    const q = newQueue();
    const p = q.get();
    q.add("x");
    expect(await p).toBe("x");
  });

  it("addAfter keeps the earliest pending time and releases items in time order", async () => {
    vi.useFakeTimers();
    const q = newQueue();
    q.addAfter("late", 1000);
    q.addAfter("early", 100);
    q.addAfter("late", 50); // earlier wins
    q.addAfter("early", 5000); // later is ignored
    expect(q.length).toBe(0);
    vi.advanceTimersByTime(49);
    expect(q.length).toBe(0);
    vi.advanceTimersByTime(1);
    expect(q.length).toBe(1);
    expect(await q.get()).toBe("late");
    vi.advanceTimersByTime(50);
    expect(await q.get()).toBe("early");
    vi.advanceTimersByTime(10_000);
    expect(q.length).toBe(0);
    expect(q.delayed).toBe(0);
  });

  it("releases many random delays in order", async () => {
    vi.useFakeTimers();
    const q = newQueue();
    const delays = Array.from({ length: 200 }, (_, i) => ({ item: `i${i}`, d: 1 + ((i * 7919) % 997) }));
    for (const { item, d } of delays) q.addAfter(item, d);
    const out: string[] = [];
    for (let t = 0; t <= 1000; t++) {
      vi.advanceTimersByTime(1);
      while (q.length > 0) out.push((await q.get()) as string);
    }
    const want = [...delays].sort((a, b) => a.d - b.d || a.item.localeCompare(b.item));
    expect(out.map((i) => delays.find((d) => d.item === i)?.d)).toEqual(want.map((w) => w.d));
  });

  it("addRateLimited backs off exponentially and counts retries", async () => {
    vi.useFakeTimers();
    const registry = createRegistry({ defaultMetrics: false });
    const q = new WorkQueue({
      name: "rl",
      rateLimiter: new ItemExponentialFailureRateLimiter(5, 1_000_000),
      metrics: queueMetrics(registry),
    });
    q.addRateLimited("a"); // 5 ms
    vi.advanceTimersByTime(4);
    expect(q.length).toBe(0);
    vi.advanceTimersByTime(1);
    expect(q.length).toBe(1);
    const a = (await q.get()) as string;
    q.done(a);
    q.addRateLimited("a"); // 10 ms
    vi.advanceTimersByTime(9);
    expect(q.length).toBe(0);
    vi.advanceTimersByTime(1);
    expect(q.length).toBe(1);
    expect(q.numRequeues("a")).toBe(2);
    q.forget("a");
    expect(q.numRequeues("a")).toBe(0);
    const text = await registry.metrics();
    expect(text).toMatch(/workqueue_retries_total\{name="rl",controller="rl"\} 2/);
    expect(text).toMatch(/workqueue_adds_total\{name="rl",controller="rl"\} 2/);
    q.shutDown();
  });

  it("shutDown releases waiting workers with undefined and ignores later adds", async () => {
    const q = newQueue();
    const p = q.get();
    q.shutDown();
    expect(await p).toBeUndefined();
    q.add("x");
    expect(q.length).toBe(0);
  });
});
