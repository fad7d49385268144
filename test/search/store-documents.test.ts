// Search as the authority over a knowledge base's documents, on every store (embedded in memory,
// embedded persisted, the run's real Qdrant): documents carry their source's stamps (source,
// content hash, origin, fetch time, refresh) on every chunk; a refresh lists a source's documents,
// moves the stamps of one it confirms, and its prune deletes exactly the documents of sources gone,
// the pages a complete source no longer has, and the legacy ids it did not write, never uploads
// and never the documents of a source that failed.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { EmbeddedStore } from "../../services/search/src/store/embedded.ts";
import { QdrantStore } from "../../services/search/src/store/qdrant.ts";
import type { ChunkWithVector, IngestStamps, VectorStore } from "../../services/search/src/store/types.ts";
import { dropCollections, qdrantPrefix } from "../ground/qdrant.ts";
import { chunk, unit } from "./store-contract.ts";

const KB = "default.kb_stamps";

function doc(docsId: string, chunks: number, stamps: IngestStamps): ChunkWithVector[] {
  return Array.from({ length: chunks }, (_, i) => {
    const c = chunk(KB, docsId, i, chunks, unit(i % 8));
    return { ...c, record: { ...c.record, ...stamps } };
  });
}

const stores: [string, () => Promise<{ store: VectorStore; cleanup: () => Promise<void> }>][] = [
  ["embedded, in memory", async () => ({ store: new EmbeddedStore(), cleanup: async () => {} })],
  [
    "embedded, persisted",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "capstan-stamps-"));
      return {
        store: new EmbeddedStore({ dataDir: dir, flushDelayMs: 10 }),
        cleanup: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  ],
  [
    "real Qdrant server",
    async () => {
      const url = inject("qdrantUrl");
      const prefix = qdrantPrefix("stamps");
      return { store: new QdrantStore({ url, collectionPrefix: prefix }), cleanup: () => dropCollections(url, prefix) };
    },
  ],
];

for (const [name, make] of stores) {
  describe(`documents by source: ${name}`, () => {
    let store: VectorStore;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await make());
      await store.ensureCollection({
        knowledgeId: KB,
        model: "test:model",
        dimensions: 8,
        chunking: { size: 800, overlap: 100 },
      });
    });
    afterAll(async () => {
      await store?.close();
      await cleanup?.();
    });

    const ids = async (source?: string) => {
      const out: string[] = [];
      let from: string | undefined;
      do {
        const page = await store.ingestedPage(KB, source, from, 2); // small pages: the walk is exercised
        out.push(...page.documents.map((d) => d.docsId));
        from = page.next;
      } while (from !== undefined);
      return out.sort();
    };

    it("lists each source's documents with their stamps, a page at a time", async () => {
      const r1 = { refresh: "r1", fetchedAt: "2026-01-01T00:00:00Z" };
      await store.replaceDocument(
        KB,
        "a1",
        doc("a1", 3, { source: "A", contentHash: "h-a1", origin: "http://x/a1", ...r1 }),
      );
      await store.replaceDocument(KB, "a2", doc("a2", 1, { source: "A", contentHash: "h-a2", ...r1 }));
      await store.replaceDocument(KB, "a3", doc("a3", 2, { source: "A", contentHash: "h-a3", ...r1 }));
      await store.replaceDocument(KB, "b1", doc("b1", 1, { source: "B", contentHash: "h-b1", ...r1 }));
      await store.replaceDocument(KB, "c1", doc("c1", 1, { source: "C", contentHash: "h-c1", ...r1 }));
      await store.replaceDocument(KB, "legacy1", doc("legacy1", 1, {}));
      await store.replaceDocument(KB, "legacy2", doc("legacy2", 1, {}));
      await store.replaceDocument(KB, "upload:u", doc("upload:u", 2, {}));
      expect(await ids("A")).toEqual(["a1", "a2", "a3"]);
      expect(await ids()).toEqual(["a1", "a2", "a3", "b1", "c1", "legacy1", "legacy2", "upload:u"]);
      const first = (await store.ingestedPage(KB, "A", undefined, 10)).documents.find((d) => d.docsId === "a1");
      expect(first).toMatchObject({
        docsId: "a1",
        chunks: 3,
        source: "A",
        contentHash: "h-a1",
        origin: "http://x/a1",
        fetchedAt: "2026-01-01T00:00:00Z",
        refresh: "r1",
      });
    });

    it("stamps every chunk of a confirmed document, and prunes exactly what the refresh left", async () => {
      const r2 = { refresh: "r2", fetchedAt: "2026-01-02T00:00:00Z" };
      // Refresh r2: A confirms a1 and rewrites a2 (a3 is gone from the site), B fails (b1 stays),
      // C left the spec; legacy1 was written again by r2, legacy2 was not.
      await store.stampDocument(KB, "a1", r2);
      await store.replaceDocument(KB, "a2", doc("a2", 2, { source: "A", contentHash: "h-a2'", ...r2 }));
      await store.replaceDocument(KB, "legacy1", doc("legacy1", 1, { refresh: "r2" }));
      const chunks = await store.documentChunks(KB, "a1", "serving");
      expect(chunks.map((c) => [c.refresh, c.fetchedAt, c.contentHash])).toEqual(
        Array(3).fill(["r2", "2026-01-02T00:00:00Z", "h-a1"]),
      );
      const deleted = await store.pruneDocuments(KB, {
        refresh: "r2",
        sources: ["A", "B"],
        complete: ["A"],
        legacy: ["legacy1", "legacy2"],
      });
      expect(deleted).toBe(3); // a3, c1, legacy2
      expect(await ids()).toEqual(["a1", "a2", "b1", "legacy1", "upload:u"]);
      expect(await store.stats(KB)).toEqual({ documents: 5, chunks: 3 + 2 + 1 + 1 + 2 });
      // Run again (a resumed refresh's prune): nothing more goes.
      expect(await store.pruneDocuments(KB, { refresh: "r2", sources: ["A", "B"], complete: ["A"], legacy: [] })).toBe(
        0,
      );
      // No source left at all: every source's document goes, the upload stays.
      expect(await store.pruneDocuments(KB, { refresh: "r3", sources: [], complete: [], legacy: [] })).toBe(3);
      expect(await ids()).toEqual(["legacy1", "upload:u"]);
    });
  });
}
