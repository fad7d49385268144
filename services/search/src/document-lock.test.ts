import { describe, expect, it } from "vitest";
import { DocumentLocks } from "./document-lock.ts";

describe("DocumentLocks", () => {
  it("runs calls for one key one after the other, other keys alongside, and forgets idle keys", async () => {
    const locks = new DocumentLocks();
    const order: string[] = [];
    let open = () => {};
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const first = locks.run("a", async () => {
      order.push("a1 start");
      await gate;
      order.push("a1 end");
    });
    const second = locks.run("a", async () => {
      order.push("a2");
      return 2;
    });
    await locks.run("b", async () => {
      order.push("b");
    });
    expect(order).toEqual(["a1 start", "b"]); // b did not wait for a; a2 waits for a1
    open();
    expect(await second).toBe(2);
    await first;
    expect(order).toEqual(["a1 start", "b", "a1 end", "a2"]);
    expect(locks.size).toBe(0);
  });

  it("releases the key when a call fails", async () => {
    const locks = new DocumentLocks();
    await expect(locks.run("a", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await locks.run("a", async () => "next")).toBe("next");
    expect(locks.size).toBe(0);
  });
});
