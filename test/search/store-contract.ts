// The one contract every VectorStore adapter passes (embedded and Qdrant), on small synthetic
// vectors so the expected scores are known exactly: score = cosineToScore(cos).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ChunkWithVector,
  type CollectionInfo,
  cosineToScore,
  embeddingIdFor,
  type VectorStore,
} from "../../services/search/src/store/types.ts";

const DIM = 8;

/** A unit vector along axis i, optionally tilted toward axis j. */
export function unit(i: number, j?: number, tilt = 0): Float32Array {
  const v = new Float32Array(DIM);
  v[i] = 1;
  if (j !== undefined) v[j] = tilt;
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

export function chunk(
  knowledgeId: string,
  docsId: string,
  chunkIndex: number,
  total: number,
  vector: Float32Array,
  text = `${docsId} #${chunkIndex}`,
): ChunkWithVector {
  return {
    vector,
    record: {
      embeddingId: embeddingIdFor(knowledgeId, docsId, chunkIndex, text),
      knowledgeId,
      docsId,
      docsName: `${docsId} name`,
      chunkIndex,
      totalChunks: total,
      text,
      extra: { source: "contract" },
    },
  };
}

const info = (knowledgeId: string, model = "test:model", dimensions = DIM): CollectionInfo => ({
  knowledgeId,
  model,
  dimensions,
  chunking: { size: 800, overlap: 100 },
});

export function storeContract(name: string, make: () => Promise<{ store: VectorStore; cleanup: () => Promise<void> }>) {
  describe(`VectorStore contract: ${name}`, () => {
    let store: VectorStore;
    let cleanup: () => Promise<void>;
    const kb = (s: string) => `kb_contract_${s}`;

    beforeAll(async () => {
      ({ store, cleanup } = await make());
    });
    afterAll(async () => {
      await store?.close();
      await cleanup?.();
    });

    it("creates a collection idempotently and remembers its settings", async () => {
      expect(await store.getCollection(kb("a"))).toBeUndefined();
      await store.ensureCollection(info(kb("a")));
      await store.ensureCollection(info(kb("a")));
      expect(await store.getCollection(kb("a"))).toEqual(info(kb("a")));
      expect(await store.stats(kb("a"))).toEqual({ documents: 0, chunks: 0 });
      expect(await store.stats(kb("never"))).toBeUndefined();
    });

    it("maps cosine to 0..1 the same way (cosineToScore): identical 1, orthogonal 0.5, opposite 0", async () => {
      await store.ensureCollection(info(kb("score")));
      const opposite = unit(0).map((x) => -x);
      await store.replaceDocument(kb("score"), "d", [
        chunk(kb("score"), "d", 0, 3, unit(0)),
        chunk(kb("score"), "d", 1, 3, unit(1)),
        chunk(kb("score"), "d", 2, 3, opposite),
      ]);
      const hits = await store.query({ keys: [kb("score")], vector: unit(0), limit: 10, minScore: 0 });
      expect(hits.map((h) => h.record.chunkIndex)).toEqual([0, 1, 2]);
      expect(hits[0]?.score).toBeCloseTo(1, 4);
      expect(hits[1]?.score).toBeCloseTo(0.5, 4);
      expect(hits[2]?.score).toBeCloseTo(0, 4);
      const tilted = await store.query({ keys: [kb("score")], vector: unit(0, 1, 1), limit: 1, minScore: 0 });
      expect(tilted[0]?.score).toBeCloseTo(cosineToScore(Math.SQRT1_2), 4);
    });

    it("stores and returns the chunk payload", async () => {
      const [hit] = await store.query({ keys: [kb("score")], vector: unit(1), limit: 1, minScore: 0 });
      expect(hit?.record).toEqual(chunk(kb("score"), "d", 1, 3, unit(1)).record);
    });

    it("orders best first, honours limit and minScore", async () => {
      await store.ensureCollection(info(kb("rank")));
      const tilts = [0.1, 0.5, 1, 2, 4];
      await store.replaceDocument(
        kb("rank"),
        "d",
        tilts.map((t, i) => chunk(kb("rank"), "d", i, tilts.length, unit(0, 1, t))),
      );
      const all = await store.query({ keys: [kb("rank")], vector: unit(0), limit: 10, minScore: 0 });
      expect(all.map((h) => h.record.chunkIndex)).toEqual([0, 1, 2, 3, 4]);
      const two = await store.query({ keys: [kb("rank")], vector: unit(0), limit: 2, minScore: 0 });
      expect(two.map((h) => h.record.chunkIndex)).toEqual([0, 1]);
      const min = (all[2]?.score as number) - 1e-4;
      const above = await store.query({ keys: [kb("rank")], vector: unit(0), limit: 10, minScore: min });
      expect(above.map((h) => h.record.chunkIndex)).toEqual([0, 1, 2]);
    });

    it("minScore is inclusive: a stored vector queried with itself passes minScore 1", async () => {
      await store.ensureCollection(info(kb("edge")));
      // Not axis-aligned: its float32 self-cosine is not exactly 1 on every engine.
      const odd = Float32Array.from([0.05, 0.61, 0.76, 0.74, 0.1, 0.2, 0.3, 0.4]);
      const v = odd.map((x) => x / Math.hypot(...odd));
      await store.replaceDocument(kb("edge"), "d", [
        chunk(kb("edge"), "d", 0, 2, v),
        chunk(kb("edge"), "d", 1, 2, unit(0, 1, 0.3)),
      ]);
      for (const vector of [v, unit(0, 1, 0.3)]) {
        const hits = await store.query({ keys: [kb("edge")], vector, limit: 10, minScore: 1 });
        expect(hits.map((h) => h.score)).toEqual([1]);
      }
    });

    it("minScore is inclusive: a hit scoring exactly the threshold is kept, one step above drops it", async () => {
      const q = unit(0, 1, 0.8);
      const all = await store.query({ keys: [kb("edge")], vector: q, limit: 10, minScore: 0 });
      expect(all).toHaveLength(2);
      for (const hit of all) {
        const at = await store.query({ keys: [kb("edge")], vector: q, limit: 10, minScore: hit.score });
        expect(at.map((h) => h.record.embeddingId)).toContain(hit.record.embeddingId);
        // Scores have six decimals, so 1e-6 above is the next score a hit can have.
        const above = await store.query({
          keys: [kb("edge")],
          vector: q,
          limit: 10,
          minScore: hit.score + 1e-6,
        });
        expect(above.map((h) => h.record.embeddingId)).not.toContain(hit.record.embeddingId);
      }
    });

    it("replaces a document's chunks without orphans, idempotently", async () => {
      await store.ensureCollection(info(kb("docs")));
      const v1 = [0, 1, 2, 3].map((i) => chunk(kb("docs"), "doc", i, 4, unit(i)));
      await store.replaceDocument(kb("docs"), "doc", v1);
      await store.replaceDocument(kb("docs"), "doc", v1);
      await store.replaceDocument(kb("docs"), "other", [chunk(kb("docs"), "other", 0, 1, unit(5))]);
      expect(await store.stats(kb("docs"))).toEqual({ documents: 2, chunks: 5 });
      const v2 = [0, 1].map((i) => chunk(kb("docs"), "doc", i, 2, unit(i + 6), `new text ${i}`));
      await store.replaceDocument(kb("docs"), "doc", v2);
      expect(await store.stats(kb("docs"))).toEqual({ documents: 2, chunks: 3 });
      const hits = await store.query({ keys: [kb("docs")], vector: unit(2), limit: 10, minScore: 0 });
      expect(
        hits
          .filter((h) => h.record.docsId === "doc")
          .map((h) => h.record.text)
          .sort(),
      ).toEqual(["new text 0", "new text 1"]);
      await store.replaceDocument(kb("docs"), "doc", []);
      expect(await store.stats(kb("docs"))).toEqual({ documents: 1, chunks: 1 });
    });

    it("lists the documents whose id has a prefix, with their chunk counts and metadata", async () => {
      await store.replaceDocument(
        kb("docs"),
        "upload:b",
        [0, 1, 2].map((i) => chunk(kb("docs"), "upload:b", i, 3, unit(i + 3))),
      );
      await store.replaceDocument(kb("docs"), "upload:a", [chunk(kb("docs"), "upload:a", 0, 1, unit(7))]);
      expect(await store.documents(kb("docs"), "upload:")).toEqual([
        { docsId: "upload:a", docsName: "upload:a name", chunks: 1, extra: { source: "contract" } },
        { docsId: "upload:b", docsName: "upload:b name", chunks: 3, extra: { source: "contract" } },
      ]);
      expect((await store.documents(kb("docs"), "")).map((d) => d.docsId)).toEqual(["other", "upload:a", "upload:b"]);
      expect(await store.documents(kb("never"), "")).toEqual([]);
      await store.deleteDocument(kb("docs"), "upload:a");
      await store.deleteDocument(kb("docs"), "upload:b");
    });

    it("deletes documents and counts what went", async () => {
      expect(await store.deleteDocument(kb("docs"), "other")).toBe(1);
      expect(await store.deleteDocument(kb("docs"), "other")).toBe(0);
      expect(await store.deleteDocument(kb("never"), "x")).toBe(0);
      expect(await store.stats(kb("docs"))).toEqual({ documents: 0, chunks: 0 });
    });

    it("keeps knowledge bases apart and merges them when several are listed", async () => {
      await store.ensureCollection(info(kb("x")));
      await store.ensureCollection(info(kb("y")));
      await store.replaceDocument(kb("x"), "dx", [chunk(kb("x"), "dx", 0, 1, unit(0, 1, 0.2))]);
      await store.replaceDocument(kb("y"), "dy", [chunk(kb("y"), "dy", 0, 1, unit(0, 1, 0.1))]);
      const onlyX = await store.query({ keys: [kb("x")], vector: unit(0), limit: 10, minScore: 0 });
      expect(onlyX.map((h) => h.record.knowledgeId)).toEqual([kb("x")]);
      const both = await store.query({ keys: [kb("x"), kb("y")], vector: unit(0), limit: 10, minScore: 0 });
      expect(both.map((h) => h.record.docsId)).toEqual(["dy", "dx"]);
      const missing = await store.query({
        keys: [kb("x"), kb("never")],
        vector: unit(0),
        limit: 10,
        minScore: 0,
      });
      expect(missing).toHaveLength(1);
    });

    it("answers a batch of queries in order", async () => {
      const lists = await store.queryBatch([
        { keys: [kb("score")], vector: unit(1), limit: 1, minScore: 0 },
        { keys: [kb("x"), kb("y")], vector: unit(0), limit: 2, minScore: 0 },
        { keys: [kb("never")], vector: unit(0), limit: 2, minScore: 0 },
      ]);
      expect(lists.map((l) => l.map((h) => h.record.docsId))).toEqual([["d"], ["dy", "dx"], []]);
    });

    it("updates chunking in place but builds another model's vector set empty, beside the serving one", async () => {
      await store.ensureCollection({ ...info(kb("x")), chunking: { size: 400, overlap: 50 } });
      expect((await store.getCollection(kb("x")))?.chunking).toEqual({ size: 400, overlap: 50 });
      expect((await store.stats(kb("x")))?.chunks).toBe(1);
      await store.ensureCollection(info(kb("x"), "test:other-model", 4));
      expect(await store.vectorSets(kb("x"))).toEqual({
        serving: { ...info(kb("x")), chunking: { size: 400, overlap: 50 } },
        building: info(kb("x"), "test:other-model", 4),
      });
      expect(await store.stats(kb("x"))).toEqual({ documents: 1, chunks: 1 });
      expect(await store.stats(kb("x"), "building")).toEqual({ documents: 0, chunks: 0 });
    });

    it("serves the old vector set while the new model's is built, then switches to it at once", async () => {
      const id = kb("gen");
      const v4 = (i: number) => unit(i).slice(0, 4);
      await store.ensureCollection(info(id));
      await store.replaceDocument(id, "d", [chunk(id, "d", 0, 1, unit(0), "old")]);
      await store.ensureCollection(info(id, "test:model-b", 4));
      await store.ensureCollection(info(id, "test:model-b", 4)); // resumed build: kept, not emptied
      await store.replaceDocument(id, "d", [chunk(id, "d", 0, 1, v4(1), "new")]);
      expect(await store.stats(id, "building")).toEqual({ documents: 1, chunks: 1 });
      await store.ensureCollection(info(id, "test:model-b", 4));
      expect(await store.stats(id, "building")).toEqual({ documents: 1, chunks: 1 });
      // Searches still read the old vectors.
      const before = await store.query({ keys: [id], vector: unit(0), limit: 5, minScore: 0 });
      expect(before.map((h) => h.record.text)).toEqual(["old"]);
      expect(await store.switchVectorSet(id, "test:model")).toBeUndefined(); // not what is being built
      expect((await store.getCollection(id))?.model).toBe("test:model");

      expect(await store.switchVectorSet(id, "test:model-b")).toEqual(info(id, "test:model-b", 4));
      expect(await store.vectorSets(id)).toEqual({ serving: info(id, "test:model-b", 4) });
      expect(await store.switchVectorSet(id)).toBeUndefined(); // nothing left to switch to
      const after = await store.query({ keys: [id], vector: v4(1), limit: 5, minScore: 0 });
      expect(after.map((h) => h.record.text)).toEqual(["new"]);
      expect(await store.stats(id)).toEqual({ documents: 1, chunks: 1 });
      // A search planned with the old model just before the switch still finds the old vectors...
      const late = await store.query({
        keys: [id],
        model: "test:model",
        vector: unit(0),
        limit: 5,
        minScore: 0,
      });
      expect(late.map((h) => h.record.text)).toEqual(["old"]);
      // ...until the grace period ends and they are deleted.
      let gone: unknown[] = late;
      for (let i = 0; i < 100 && gone.length > 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        gone = await store.query({ keys: [id], model: "test:model", vector: unit(0), limit: 5, minScore: 0 });
      }
      expect(gone).toEqual([]);
    });

    it("abandons a build when the model goes back, and deletes documents from every vector set", async () => {
      const id = kb("back");
      await store.ensureCollection(info(id));
      await store.replaceDocument(id, "keep", [chunk(id, "keep", 0, 1, unit(0))]);
      await store.replaceDocument(id, "gone", [chunk(id, "gone", 0, 1, unit(1))]);
      await store.ensureCollection(info(id, "test:model-c", 4));
      await store.replaceDocument(id, "gone", [chunk(id, "gone", 0, 1, unit(2).slice(0, 4))]);
      expect(await store.deleteDocument(id, "gone")).toBe(2); // one chunk in each vector set
      await store.replaceDocument(id, "half", [chunk(id, "half", 0, 1, unit(3).slice(0, 4))]);
      await store.ensureCollection(info(id));
      expect(await store.vectorSets(id)).toEqual({ serving: info(id) });
      expect(await store.stats(id)).toEqual({ documents: 1, chunks: 1 });
      // Starting that model again starts from empty: the abandoned build's documents are gone.
      await store.ensureCollection(info(id, "test:model-c", 4));
      expect(await store.stats(id, "building")).toEqual({ documents: 0, chunks: 0 });
      expect(await store.dropCollection(id)).toBe(true);
      expect(await store.vectorSets(id)).toBeUndefined();
      expect(await store.stats(id, "building")).toBeUndefined();
    });

    it("walks a vector set's documents a page at a time and reads one document's chunks", async () => {
      const id = kb("pages");
      await store.ensureCollection(info(id));
      const names = ["upload:a", "doc_1", "upload:b", "upload:c", "doc_2", "upload:d", "upload:e"];
      for (const [i, d] of names.entries()) {
        await store.replaceDocument(id, d, [
          chunk(id, d, 0, 2, unit(i % DIM)),
          chunk(id, d, 1, 2, unit((i + 1) % DIM)),
        ]);
      }
      // Every upload exactly once, whatever the page size, each page looking at 2 documents at most.
      const seen: string[] = [];
      let from: string | undefined;
      let pages = 0;
      do {
        const page = await store.documentPage(id, "serving", "upload:", from, 2);
        expect(page.documents.length).toBeLessThanOrEqual(2);
        seen.push(...page.documents.map((d) => d.docsId));
        // A page started at a document's position starts with that document.
        const [first] = page.documents;
        if (first)
          expect((await store.documentPage(id, "serving", "upload:", first.at, 1)).documents[0]?.docsId).toBe(
            first.docsId,
          );
        from = page.next;
        pages += 1;
      } while (from !== undefined && pages < 20);
      expect(seen.sort()).toEqual(["upload:a", "upload:b", "upload:c", "upload:d", "upload:e"]);
      const whole = await store.documentPage(id, "serving", "upload:", undefined, 100);
      expect(whole.next).toBeUndefined();
      expect(whole.documents.find((d) => d.docsId === "upload:c")).toMatchObject({
        docsName: "upload:c name",
        chunks: 2,
        extra: { source: "contract" },
      });

      const chunks = await store.documentChunks(id, "upload:c", "serving");
      expect(chunks.map((c) => [c.chunkIndex, c.totalChunks, c.text, c.docsName, c.extra])).toEqual([
        [0, 2, "upload:c #0", "upload:c name", { source: "contract" }],
        [1, 2, "upload:c #1", "upload:c name", { source: "contract" }],
      ]);
      expect(chunks[0]?.embeddingId).toBe(embeddingIdFor(id, "upload:c", 0, "upload:c #0"));
      expect(await store.documentChunks(id, "upload:none", "serving")).toEqual([]);
      // The building vector set is walked apart from the serving one.
      expect(await store.documentChunks(id, "upload:c", "building")).toEqual([]);
      await store.ensureCollection(info(id, "test:model-p", 4));
      expect(await store.documentPage(id, "building", "upload:", undefined, 10)).toEqual({ documents: [] });
      await store.replaceDocument(id, "upload:z", [chunk(id, "upload:z", 0, 1, unit(1).slice(0, 4))]);
      const building = await store.documentPage(id, "building", "upload:", undefined, 10);
      expect(building.documents.map((d) => d.docsId)).toEqual(["upload:z"]);
      expect((await store.documentChunks(id, "upload:z", "building")).map((c) => c.text)).toEqual(["upload:z #0"]);
      expect(await store.documentPage(kb("nothing"), "serving", "upload:", undefined, 10)).toEqual({ documents: [] });
      await store.dropCollection(id);
    });

    it("rejects vectors of the wrong size", async () => {
      await expect(
        store.replaceDocument(kb("y"), "bad", [chunk(kb("y"), "bad", 0, 1, new Float32Array(3))]),
      ).rejects.toThrow(/dimensions/);
      await expect(store.replaceDocument(kb("never"), "d", [])).rejects.toThrow(/no collection/);
    });

    it("drops a collection and everything in it", async () => {
      expect(await store.dropCollection(kb("y"))).toBe(true);
      expect(await store.dropCollection(kb("y"))).toBe(false);
      expect(await store.getCollection(kb("y"))).toBeUndefined();
      expect(await store.query({ keys: [kb("y")], vector: unit(0), limit: 5, minScore: 0 })).toEqual([]);
    });
  });
}
