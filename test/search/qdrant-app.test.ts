// The whole service on the Qdrant adapter (chosen by config.qdrant.url, as QDRANT_URL does):
// ingestion, search, batch and counts, against the run's real Qdrant server. Deleting the
// knowledge bases empties them; the shared collections themselves are dropped after.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { SearchResult } from "../../services/search/src/index.ts";
import { dropCollections, qdrantPrefix } from "../ground/qdrant.ts";
import { HANDBOOK, SCIENCE } from "./corpus.ts";
import { call, INTERNAL_TOKEN, ingest, knowledgeBase, type Running, searchKey, startSearch } from "./helpers.ts";

/** The serving vector set's model, as the documents API names it. */
const MINILM = "local:all-MiniLM-L6-v2";

const KEY = "cap_srch_qdrant_app";
const url = inject("qdrantUrl");
const prefix = qdrantPrefix("app");
let s: Running;

beforeAll(async () => {
  s = await startSearch({
    kbs: [knowledgeBase("handbook"), knowledgeBase("science")],
    keys: [searchKey("q", KEY, { knowledgeIds: ["kb_handbook", "kb_science"] })],
    config: {
      qdrant: { url, collectionPrefix: prefix },
    },
  });
  await ingest(s.internalUrl, "kb_handbook", HANDBOOK.slice(0, 6));
  await ingest(s.internalUrl, "kb_science", SCIENCE.slice(0, 6));
});
afterAll(async () => {
  for (const kb of ["kb_handbook", "kb_science"]) {
    await call(s.internalUrl, `/internal/v1/namespaces/default/knowledge-bases/${kb}`, {
      method: "DELETE",
      token: INTERNAL_TOKEN,
    }).catch(() => {});
  }
  await s?.close();
  await dropCollections(url, prefix);
});

describe("search on the Qdrant adapter", () => {
  it("finds paraphrases across two knowledge bases with the same scores semantics", async () => {
    const r = await call<SearchResult[]>(s.url, "/v1/rag/search", {
      token: KEY,
      body: {
        knowledgeIds: ["kb_handbook", "kb_science"],
        text: "How do green plants make food from light?",
        minSimilarity: 0.6,
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.data?.[0]).toMatchObject({ knowledgeId: "kb_science", docsId: "photosynthesis", source: "vector" });
    expect(r.body.data?.every((x) => x.score >= 0.6 && x.score <= 1)).toBe(true);
    const unrelated = await call<SearchResult[]>(s.url, "/v1/rag/search", {
      token: KEY,
      body: { knowledgeIds: ["kb_handbook", "kb_science"], text: "Which football club won the most championships?" },
    });
    expect(unrelated.body.data).toEqual([]);
  });

  it("answers a batch and reports counts", async () => {
    const r = await call<{ code: number; data: SearchResult[] | null }[]>(s.url, "/v1/rag/search/batch", {
      token: KEY,
      body: {
        queries: [
          {
            knowledgeIds: ["kb_handbook"],
            text: "Will the company pay me back for my business trip costs?",
            minSimilarity: 0.6,
          },
          { knowledgeIds: ["kb_science"], text: "How do bees produce honey?", minSimilarity: 0.6, maxResults: 1 },
        ],
      },
    });
    expect(r.body.data?.map((x) => x.data?.[0]?.docsId)).toEqual(["expense-claims", "honeybees"]);
    const info = await call(s.internalUrl, "/internal/v1/namespaces/default/knowledge-bases/kb_handbook", {
      method: "GET",
      token: INTERNAL_TOKEN,
    });
    expect(info.body.data).toEqual({
      knowledgeId: "kb_handbook",
      model: MINILM,
      dimensions: 384,
      documents: 6,
      chunks: 6,
      collection: `${prefix}_local_all_minilm_l6_v2_384/default.kb_handbook`,
      vectors: {
        backend: "qdrant",
        size: 384,
        distance: "Cosine",
        hnsw: { m: 0, payloadM: 16, efConstruct: 128, efSearch: 128 },
      },
    });
  });
});
