// Semantic search with the real model over real HTTP: a corpus of distinct topics in two
// knowledge bases, paraphrased questions, unrelated questions, maxResults, minSimilarity, merging.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SearchResult } from "../../services/search/src/index.ts";
import { HANDBOOK, PARAPHRASES, SCIENCE, UNRELATED } from "./corpus.ts";
import { call, ingest, knowledgeBase, type Running, searchKey, startSearch } from "./helpers.ts";

const KEY = "cap_srch_test_key_all";
let s: Running;

beforeAll(async () => {
  s = await startSearch({
    kbs: [knowledgeBase("handbook"), knowledgeBase("science"), knowledgeBase("empty")],
    keys: [searchKey("all", KEY, { knowledgeIds: ["kb_handbook", "kb_science", "kb_empty"] })],
  });
  await ingest(s.internalUrl, "kb_handbook", HANDBOOK);
  await ingest(s.internalUrl, "kb_science", SCIENCE);
});
afterAll(async () => {
  await s?.close();
});

const search = (body: unknown) => call<SearchResult[]>(s.url, "/v1/rag/search", { token: KEY, body });

describe("POST /v1/rag/search with the real model", () => {
  it.each(PARAPHRASES)("finds $docsId first for a paraphrase: $query", async ({ kb, query, docsId }) => {
    const r = await search({ knowledgeIds: [`kb_${kb}`], text: query, minSimilarity: 0.6 });
    expect(r.status).toBe(200);
    expect(r.body.code).toBe(200);
    expect(r.body.message).toBe("success");
    expect(r.body.data?.[0]?.docsId).toBe(docsId);
  });

  it("returns the documented result shape", async () => {
    const r = await search({ knowledgeIds: ["kb_science"], text: "What wiped out the dinosaurs?" });
    const top = r.body.data?.[0] as SearchResult;
    expect(top).toMatchObject({
      knowledgeId: "kb_science",
      docsId: "dinosaurs",
      docsName: "Dinosaur extinction",
      source: "vector",
      metadata: {
        knowledgeId: "kb_science",
        docsId: "dinosaurs",
        docsName: "Dinosaur extinction",
        chunkIndex: 0,
        totalChunks: 1,
      },
    });
    expect(top.embeddingId).toMatch(/^emb_[0-9a-f]{32}$/);
    expect(top.text).toContain("asteroid");
    expect(top.score).toBeGreaterThanOrEqual(0.75);
    expect(top.score).toBeLessThanOrEqual(1);
    expect(top.rerankedScore).toBeGreaterThanOrEqual(0);
    expect(top.rerankedScore).toBeLessThanOrEqual(1);
  });

  it.each(UNRELATED)("returns nothing above the default 0.75 for an unrelated query: %s", async (text) => {
    const r = await search({ knowledgeIds: ["kb_handbook", "kb_science"], text });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual([]);
  });

  it("drops results under minSimilarity and orders by rerankedScore", async () => {
    const low = await search({
      knowledgeIds: ["kb_science"],
      text: "How do bees produce honey?",
      minSimilarity: 0,
      maxResults: 50,
    });
    const all = low.body.data as SearchResult[];
    expect(all).toHaveLength(SCIENCE.length);
    for (let i = 1; i < all.length; i++) {
      expect((all[i - 1] as SearchResult).rerankedScore).toBeGreaterThanOrEqual((all[i] as SearchResult).rerankedScore);
    }
    const cut = 0.6;
    const high = await search({
      knowledgeIds: ["kb_science"],
      text: "How do bees produce honey?",
      minSimilarity: cut,
      maxResults: 50,
    });
    const kept = high.body.data as SearchResult[];
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(all.length);
    expect(kept.every((x) => x.score >= cut)).toBe(true);
    expect(kept.map((x) => x.embeddingId).sort()).toEqual(
      all
        .filter((x) => x.score >= cut)
        .map((x) => x.embeddingId)
        .sort(),
    );
  });

  it("returns at most maxResults", async () => {
    for (const maxResults of [1, 3, 7]) {
      const r = await search({
        knowledgeIds: ["kb_handbook"],
        text: "working at the office",
        minSimilarity: 0,
        maxResults,
      });
      expect(r.body.data).toHaveLength(maxResults);
    }
    const dflt = await search({
      knowledgeIds: ["kb_handbook", "kb_science"],
      text: "working at the office",
      minSimilarity: 0,
    });
    expect(dflt.body.data).toHaveLength(10);
  });

  it("merges results across two knowledge bases by score", async () => {
    const text = "Why does the sea level go up and down every day?";
    const both = await search({ knowledgeIds: ["kb_handbook", "kb_science"], text, minSimilarity: 0, maxResults: 24 });
    const results = both.body.data as SearchResult[];
    expect(results).toHaveLength(HANDBOOK.length + SCIENCE.length);
    expect(new Set(results.map((r) => r.knowledgeId))).toEqual(new Set(["kb_handbook", "kb_science"]));
    expect(results[0]?.docsId).toBe("tides");
    // The union is exactly what each knowledge base gives on its own.
    const one = await search({ knowledgeIds: ["kb_handbook"], text, minSimilarity: 0, maxResults: 24 });
    const two = await search({ knowledgeIds: ["kb_science"], text, minSimilarity: 0, maxResults: 24 });
    const scoreOf = new Map([...(one.body.data ?? []), ...(two.body.data ?? [])].map((r) => [r.embeddingId, r.score]));
    for (const r of results) expect(r.score).toBeCloseTo(scoreOf.get(r.embeddingId) as number, 5);
    // A paraphrase about the handbook still finds its handbook document when both are listed.
    const pw = await search({
      knowledgeIds: ["kb_science", "kb_handbook"],
      text: PARAPHRASES[0]?.query,
      minSimilarity: 0.6,
    });
    expect(pw.body.data?.[0]).toMatchObject({ knowledgeId: "kb_handbook", docsId: "password-reset" });
  });

  it("answers an existing but empty knowledge base with no results", async () => {
    const r = await search({ knowledgeIds: ["kb_empty"], text: "anything at all", minSimilarity: 0 });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual([]);
  });
});
