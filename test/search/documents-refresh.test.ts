// The internal documents API as a refresh uses it, through the typed client against the real
// service (its wire schemas checked on both sides): a document written again with the same
// content is not embedded again (only its stamps move), a change of text or of chunking is; a
// source's documents are listed with their hash, origin, fetch time and refresh; the prune at a
// refresh's end deletes what it left and answers bad bodies with the documented 400.
import { SearchApiError, SearchClient } from "@capstan/shared/clients/search-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, INTERNAL_TOKEN, knowledgeBase, type Running, startSearch } from "./helpers.ts";

const ref = { namespace: "default", knowledgeId: "kb_site" };
let s: Running;
let client: SearchClient;

/** Chunks embedded by the documents API so far (its metric). */
async function embeddedChunks(): Promise<number> {
  const text = await (await fetch(`${s.internalUrl}/metrics`)).text();
  return Number(/^capstan_search_ingested_chunks_total (\d+)/m.exec(text)?.[1] ?? 0);
}

const page = (n: number, text: string, refresh: string) => ({
  docsName: `Site/page${n}`,
  text,
  metadata: { source: `http://site/page${n}` },
  source: "site",
  origin: `http://site/page${n}`,
  fetchedAt: `2026-01-0${refresh === "r1" ? 1 : 2}T00:00:00Z`,
  refresh,
});

beforeAll(async () => {
  s = await startSearch({ kbs: [knowledgeBase("site", { chunking: { size: 200, overlap: 20 } })] });
  client = new SearchClient({ baseURL: s.internalUrl, token: INTERNAL_TOKEN, namespace: "default", timeoutMs: 60_000 });
});
afterAll(async () => {
  await s?.close();
});

describe("incremental refresh through the documents API", () => {
  it("embeds only what changed, lists a source with its stamps, and prunes what a refresh left", async () => {
    await client.ensureKnowledgeBase(ref);
    const long = "The observatory opens at nine. ".repeat(20);
    const first = [
      await client.upsertDocument(ref, "p1", page(1, long, "r1")),
      await client.upsertDocument(ref, "p2", page(2, "Comets return.", "r1")),
      await client.upsertDocument(ref, "p3", page(3, "Telescopes are large.", "r1")),
    ];
    expect(first.map((r) => r.embedded)).toEqual([true, true, true]);
    const afterFirst = await embeddedChunks();

    // Refresh r2: p1 unchanged, p2 changed, p3 gone from the site.
    const same = await client.upsertDocument(ref, "p1", page(1, long, "r2"));
    expect(same).toMatchObject({ embedded: false, chunks: first[0]?.chunks, contentHash: first[0]?.contentHash });
    expect(await embeddedChunks()).toBe(afterFirst);
    const changed = await client.upsertDocument(ref, "p2", page(2, "Comets return every 76 years.", "r2"));
    expect(changed.embedded).toBe(true);
    expect(changed.contentHash).not.toBe(first[1]?.contentHash);
    expect(await embeddedChunks()).toBe(afterFirst + changed.chunks);

    const listed = await client.ingestedDocuments(ref, { source: "site" });
    expect(listed.documents.map((d) => [d.docsId, d.refresh, d.fetchedAt]).sort()).toEqual([
      ["p1", "r2", "2026-01-02T00:00:00Z"],
      ["p2", "r2", "2026-01-02T00:00:00Z"],
      ["p3", "r1", "2026-01-01T00:00:00Z"],
    ]);
    expect(listed.documents.find((d) => d.docsId === "p1")).toMatchObject({
      origin: "http://site/page1",
      contentHash: first[0]?.contentHash,
      chunks: first[0]?.chunks,
    });

    const pruned = await client.pruneDocuments(ref, { refresh: "r2", sources: ["site"], complete: ["site"] });
    expect(pruned).toEqual({ knowledgeId: "kb_site", deleted: 1 });
    expect((await client.getKnowledgeBase(ref))?.documents).toBe(2);
    const hits = await client.search({ knowledgeIds: ["kb_site"], text: "telescopes", minSimilarity: 0 });
    expect(hits.some((h) => h.docsId === "p3")).toBe(false);
  });

  it("embeds again when the chunking changed", async () => {
    const before = await client.upsertDocument(ref, "p1", page(1, "The observatory opens at nine. ".repeat(20), "r3"));
    expect(before.embedded).toBe(false);
    await client.ensureKnowledgeBase(ref, { chunking: { size: 400, overlap: 40 } });
    const after = await client.upsertDocument(ref, "p1", page(1, "The observatory opens at nine. ".repeat(20), "r3"));
    expect(after.embedded).toBe(true);
    expect(after.chunks).toBeLessThan(before.chunks);
  });

  it("answers bad list and prune input with 400 envelopes", async () => {
    const prune = `/internal/v1/namespaces/default/knowledge-bases/kb_site/prune`;
    const bad = await call(s.internalUrl, prune, {
      token: INTERNAL_TOKEN,
      body: { refresh: "has space", sources: [] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 400, data: null });
    expect(bad.body.message).toContain("refresh");
    const list = await call(
      s.internalUrl,
      `/internal/v1/namespaces/default/knowledge-bases/kb_site/documents?limit=0`,
      {
        method: "GET",
        token: INTERNAL_TOKEN,
      },
    );
    expect(list.status).toBe(400);
    expect(list.body.message).toContain("limit");
    await expect(client.ingestedDocuments(ref, { source: "not a token" })).rejects.toBeInstanceOf(SearchApiError);
  });
});
