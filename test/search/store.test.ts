// The vector store contract on the embedded store (in memory and persisted) and on the Qdrant
// adapter against the run's real Qdrant server (test/ground/qdrant.ts), always; plus the
// embedded store's persistence across restarts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { EmbeddedStore } from "../../services/search/src/store/embedded.ts";
import { QdrantStore } from "../../services/search/src/store/qdrant.ts";
import { dropCollections, qdrantPrefix } from "../ground/qdrant.ts";
import { chunk, storeContract, unit } from "./store-contract.ts";

// A short grace period: the contract waits for a retired vector set to be deleted.
const retireGraceMs = 300;

storeContract("embedded, in memory", async () => ({
  store: new EmbeddedStore({ retireGraceMs }),
  cleanup: async () => {},
}));

storeContract("embedded, persisted", async () => {
  const dir = mkdtempSync(join(tmpdir(), "capstan-store-"));
  return {
    store: new EmbeddedStore({ dataDir: dir, flushDelayMs: 10, retireGraceMs }),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
});

storeContract("real Qdrant server", async () => {
  const url = inject("qdrantUrl");
  const prefix = qdrantPrefix("contract");
  return {
    store: new QdrantStore({ url, collectionPrefix: prefix, retireGraceMs }),
    cleanup: () => dropCollections(url, prefix),
  };
});

describe("embedded store persistence", () => {
  it("reloads collections, chunks and the index from its data folder", async () => {
    const dir = mkdtempSync(join(tmpdir(), "capstan-persist-"));
    try {
      const kb = "kb_persisted";
      const first = new EmbeddedStore({ dataDir: dir });
      await first.ensureCollection({
        knowledgeId: kb,
        model: "test:model",
        dimensions: 8,
        chunking: { size: 300, overlap: 30 },
      });
      await first.replaceDocument(kb, "a", [chunk(kb, "a", 0, 2, unit(0)), chunk(kb, "a", 1, 2, unit(1))]);
      await first.replaceDocument(kb, "b", [chunk(kb, "b", 0, 1, unit(2))]);
      await first.deleteDocument(kb, "b");
      await first.close();

      const second = new EmbeddedStore({ dataDir: dir });
      expect((await second.getCollection(kb))?.chunking).toEqual({ size: 300, overlap: 30 });
      expect(await second.stats(kb)).toEqual({ documents: 1, chunks: 2 });
      const hits = await second.query({ keys: [kb], vector: unit(1), limit: 5, minScore: 0 });
      expect(hits.map((h) => [h.record.docsId, h.record.chunkIndex])).toEqual([
        ["a", 1],
        ["a", 0],
      ]);
      // New chunks after a reload get fresh keys (no clash with the loaded ones).
      await second.replaceDocument(kb, "c", [chunk(kb, "c", 0, 1, unit(3))]);
      expect(await second.stats(kb)).toEqual({ documents: 2, chunks: 3 });
      await second.dropCollection(kb);
      await second.close();
      const third = new EmbeddedStore({ dataDir: dir });
      expect(await third.getCollection(kb)).toBeUndefined();
      await third.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("keeps a vector set being built across restarts, and the switched one after", async () => {
    const dir = mkdtempSync(join(tmpdir(), "capstan-persist-"));
    const kb = "kb_vector_sets";
    const settings = (model: string, dimensions: number) => ({
      knowledgeId: kb,
      model,
      dimensions,
      chunking: { size: 800, overlap: 100 },
    });
    try {
      const first = new EmbeddedStore({ dataDir: dir });
      await first.ensureCollection(settings("test:a", 8));
      await first.replaceDocument(kb, "a", [chunk(kb, "a", 0, 1, unit(0))]);
      await first.ensureCollection(settings("test:b", 4));
      await first.replaceDocument(kb, "b", [chunk(kb, "b", 0, 1, unit(1).slice(0, 4))]);
      await first.close();

      const second = new EmbeddedStore({ dataDir: dir });
      expect(await second.vectorSets(kb)).toEqual({ serving: settings("test:a", 8), building: settings("test:b", 4) });
      expect(await second.stats(kb, "building")).toEqual({ documents: 1, chunks: 1 });
      await second.switchVectorSet(kb, "test:b");
      await second.close();

      const third = new EmbeddedStore({ dataDir: dir });
      expect(await third.vectorSets(kb)).toEqual({ serving: settings("test:b", 4) });
      const hits = await third.query({ keys: [kb], vector: unit(1).slice(0, 4), limit: 5, minScore: 0 });
      expect(hits.map((h) => h.record.docsId)).toEqual(["b"]);
      await third.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("Qdrant: a retired vector set outliving its process", () => {
  it("is deleted by the next ensure of that knowledge base", async () => {
    const url = inject("qdrantUrl");
    const prefix = qdrantPrefix("retired");
    const kb = "kb_retired";
    const settings = (model: string, dimensions: number) => ({
      knowledgeId: kb,
      model,
      dimensions,
      chunking: { size: 800, overlap: 100 },
    });
    const old = { keys: [kb], model: "test:a", vector: unit(0), limit: 5, minScore: 0 };
    try {
      const first = new QdrantStore({ url, collectionPrefix: prefix, retireGraceMs });
      await first.ensureCollection(settings("test:a", 8));
      await first.replaceDocument(kb, "a", [chunk(kb, "a", 0, 1, unit(0))]);
      await first.ensureCollection(settings("test:b", 4));
      await first.replaceDocument(kb, "b", [chunk(kb, "b", 0, 1, unit(1).slice(0, 4))]);
      await first.switchVectorSet(kb, "test:b");
      await first.close(); // stops before the grace period ends: the retired vectors stay

      await new Promise((r) => setTimeout(r, retireGraceMs + 50));
      const second = new QdrantStore({ url, collectionPrefix: prefix, retireGraceMs });
      expect((await second.query(old)).map((h) => h.record.docsId)).toEqual(["a"]);
      await second.ensureCollection(settings("test:b", 4));
      expect(await second.query(old)).toEqual([]);
      expect(await second.stats(kb)).toEqual({ documents: 1, chunks: 1 });
      await second.close();
    } finally {
      await dropCollections(url, prefix);
    }
  });
});
