// The write queue a refresh writes each source's documents through: bounded writes at once, a
// bounded buffer whose push waits while it is full, the last document of an id landing last, and
// the first failure stopping the queue. The writes are held open by the test (each one resolves
// when the test says), so what runs when is exact.
import { describe, expect, it } from "vitest";
import { WriteQueue } from "./write-queue.ts";

interface Doc {
  docsId: string;
  text: string;
}

/** A queue whose writes wait to be ended by the test; `landed` lists what each ended write wrote. */
function heldQueue(concurrency: number, capacity: number) {
  const running: { doc: Doc; end: (err?: Error) => void }[] = [];
  const landed: string[] = [];
  let written = 0;
  const queue = new WriteQueue<Doc>({
    write: (doc) =>
      new Promise((resolve, reject) => {
        running.push({
          doc,
          end: (err) => {
            if (err) return reject(err);
            landed.push(`${doc.docsId}=${doc.text}`);
            resolve({ docsId: doc.docsId, chunks: 1 } as never);
          },
        });
      }),
    onWritten: () => {
      written++;
    },
    concurrency,
    capacity,
  });
  const endFirst = async (err?: Error) => {
    running.shift()?.end(err);
    await new Promise((r) => setImmediate(r));
  };
  return { queue, running, landed, endFirst, written: () => written };
}

/** Whether p has settled after the pending callbacks ran. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((r) => setImmediate(r));
  return done;
}

describe("WriteQueue", () => {
  it("writes at most `concurrency` at once and holds the producer while `capacity` documents are held", async () => {
    const q = heldQueue(2, 4);
    for (const id of ["a", "b", "c"]) await q.queue.push({ docsId: id, text: "1" });
    expect(q.running.map((r) => r.doc.docsId)).toEqual(["a", "b"]);
    const fourth = q.queue.push({ docsId: "d", text: "1" });
    expect(await settled(fourth)).toBe(false); // four held: full
    await q.endFirst();
    expect(await settled(fourth)).toBe(true); // a written: room for one more
    expect(q.running.map((r) => r.doc.docsId)).toEqual(["b", "c"]);
    const drained = q.queue.drain();
    while (q.running.length > 0) await q.endFirst();
    await drained;
    expect(q.landed).toEqual(["a=1", "b=1", "c=1", "d=1"]);
    expect(q.written()).toBe(4);
  });

  it("lands the last document pushed for an id last", async () => {
    const q = heldQueue(2, 8);
    await q.queue.push({ docsId: "a", text: "1" }); // being written
    await q.queue.push({ docsId: "a", text: "2" }); // waits for the write of a=1
    await q.queue.push({ docsId: "b", text: "1" }); // starts beside a=1
    await q.queue.push({ docsId: "a", text: "3" }); // replaces a=2, never written
    expect(q.running.map((r) => `${r.doc.docsId}=${r.doc.text}`)).toEqual(["a=1", "b=1"]);
    const drained = q.queue.drain();
    while (q.running.length > 0) await q.endFirst();
    await drained;
    expect(q.landed).toEqual(["a=1", "b=1", "a=3"]);
  });

  it("stops at the first failed write: nothing more starts, push and drain reject with it", async () => {
    const q = heldQueue(1, 3);
    await q.queue.push({ docsId: "a", text: "1" });
    await q.queue.push({ docsId: "b", text: "1" });
    await q.endFirst(new Error("search says no"));
    expect(q.running).toHaveLength(0); // b never started
    await expect(q.queue.push({ docsId: "c", text: "1" })).rejects.toThrow("search says no");
    await expect(q.queue.drain()).rejects.toThrow("search says no");
    expect(q.landed).toEqual([]);
  });
});
