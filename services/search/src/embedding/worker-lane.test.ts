import { threadId } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { WorkerLane } from "./worker-lane.ts";

const STAND_IN = new URL("./fixtures/stand-in-worker.ts", import.meta.url);
const lanes: WorkerLane[] = [];

function lane(workerData: unknown = {}, mergeLimit = 8, idleCloseMs?: number): WorkerLane {
  const l = new WorkerLane({
    script: STAND_IN,
    workerData,
    mergeLimit,
    name: "test",
    ...(idleCloseMs !== undefined ? { idleCloseMs } : {}),
  });
  lanes.push(l);
  return l;
}

afterEach(async () => {
  await Promise.all(lanes.splice(0).map((l) => l.close()));
});

const first = (vs: Float32Array[]) => vs.map((v) => v[0]);

describe("WorkerLane", () => {
  it("runs jobs in a worker thread and answers each with its own vectors", async () => {
    const l = lane();
    const info = await l.start();
    expect(info.threadId).not.toBe(threadId);
    expect(first(await l.run(["a", "bbb"]))).toEqual([1, 3]);
  });

  it("merges jobs queued behind a running one into one run, and splits the answer back", async () => {
    const l = lane();
    await l.start();
    const busy = l.run(["wait:200"]);
    const queued = [l.run(["xx"]), l.run(["yyy", "z"]), l.run(["wwww"])];
    expect(first(await busy)).toEqual([8]);
    expect((await Promise.all(queued)).map(first)).toEqual([[2], [3, 1], [4]]);
  });

  it("fails only the running job when the worker exits, and starts a fresh worker for the next", async () => {
    const l = lane();
    await l.start();
    await expect(l.run(["exit"])).rejects.toThrow(/embedding worker \(test\) exited with code 3/);
    expect(first(await l.run(["ok"]))).toEqual([2]);
    expect(l.starts).toBe(2);
  });

  it("fails the running job when the worker throws, jobs queued behind it still run", async () => {
    const l = lane({}, 1);
    await l.start();
    const crashed = l.run(["throw"]);
    const after = l.run(["next"]);
    await expect(crashed).rejects.toThrow(/embedding worker \(test\) failed: kaboom/);
    expect(first(await after)).toEqual([4]);
  });

  it("rejects a job the worker answers with an error, and keeps the worker", async () => {
    const l = lane();
    await l.start();
    await expect(l.run(["error"])).rejects.toThrow("embedding failed: bad batch");
    expect(first(await l.run(["fine"]))).toEqual([4]);
    expect(l.starts).toBe(1);
  });

  it("rejects start and every job when the model cannot load, never hangs", async () => {
    const l = lane({ load: "fail" });
    await expect(l.start()).rejects.toThrow(/could not load the model: no model here/);
    await expect(l.run(["a"])).rejects.toThrow(/could not load the model/);
    await expect(l.run(["b"])).rejects.toThrow(/could not load the model/);
  });

  it("rejects jobs after close", async () => {
    const l = lane();
    await l.start();
    const pending = expect(l.run(["wait:5000"])).rejects.toThrow(/closed/);
    await l.close();
    await pending;
    await expect(l.run(["a"])).rejects.toThrow(/closed/);
  });

  it("closes its worker after idleCloseMs without a job, and starts a new one for the next", async () => {
    const l = lane({}, 8, 100);
    expect(first(await l.run(["abc"]))).toEqual([3]);
    expect(l.running).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(l.running).toBe(false);
    expect(first(await l.run(["abcd"]))).toEqual([4]);
    expect(l.starts).toBe(2);
  });

  it("keeps its worker while jobs come closer together than idleCloseMs", async () => {
    const l = lane({}, 8, 300);
    for (let i = 0; i < 5; i++) {
      expect(first(await l.run(["ab"]))).toEqual([2]);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(l.running).toBe(true);
    expect(l.starts).toBe(1);
  });
});
