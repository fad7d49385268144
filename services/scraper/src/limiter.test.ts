import { describe, expect, it } from "vitest";
import { ScraperError } from "./errors.ts";
import { Limiter } from "./limiter.ts";

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe("Limiter", () => {
  it("runs `concurrency` tasks, queues `maxQueue`, refuses the rest with QUEUE_FULL", async () => {
    const limiter = new Limiter(1, 1);
    const gate = deferred();
    const order: string[] = [];
    const a = limiter.run(async () => {
      order.push("a");
      await gate.promise;
    });
    const b = limiter.run(async () => {
      order.push("b");
    });
    expect(limiter.active).toBe(1);
    expect(limiter.queued).toBe(1);
    expect(limiter.full).toBe(true);
    const c = await limiter.run(async () => "c").catch((e: unknown) => e);
    expect(c).toBeInstanceOf(ScraperError);
    expect((c as ScraperError).code).toBe("QUEUE_FULL");
    expect((c as ScraperError).retryAfter).toBe(1);
    gate.resolve();
    await Promise.all([a, b]);
    expect(order).toEqual(["a", "b"]);
    expect(limiter.active).toBe(0);
  });

  it("lets forced tasks wait beyond the queue bound", async () => {
    const limiter = new Limiter(1, 0);
    const gate = deferred();
    const a = limiter.run(() => gate.promise);
    const b = limiter.run(async () => "b", { force: true });
    gate.resolve();
    expect(await b).toBe("b");
    await a;
  });

  it("drops a waiting task whose signal aborts", async () => {
    const limiter = new Limiter(1, 5);
    const gate = deferred();
    const a = limiter.run(() => gate.promise);
    const controller = new AbortController();
    const b = limiter.run(async () => "never", { signal: controller.signal });
    controller.abort(new Error("gone"));
    await expect(b).rejects.toThrow("gone");
    expect(limiter.queued).toBe(0);
    gate.resolve();
    await a;
  });
});
