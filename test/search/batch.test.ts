// POST /v1/rag/search/batch: results in order, per-query errors that do not fail the others,
// whole-request errors, and one embedding model run for all the query texts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SearchResult } from "../../services/search/src/index.ts";
import { HANDBOOK, PARAPHRASES, SCIENCE } from "./corpus.ts";
import { call, ingest, knowledgeBase, type Running, searchKey, startSearch } from "./helpers.ts";

const KEY = "cap_srch_batch_key";
let s: Running;

beforeAll(async () => {
  s = await startSearch({
    ownModel: true,
    kbs: [knowledgeBase("handbook"), knowledgeBase("science"), knowledgeBase("secret")],
    keys: [
      searchKey("batch", KEY, { knowledgeIds: ["kb_handbook", "kb_science"] }),
      searchKey("fenced", "key-fenced", { knowledgeIds: ["kb_handbook"], allowedCIDRs: ["10.0.0.0/8"] }),
    ],
  });
  await ingest(s.internalUrl, "kb_handbook", HANDBOOK);
  await ingest(s.internalUrl, "kb_science", SCIENCE);
});
afterAll(async () => {
  await s?.close();
});

type Item = { code: number; message: string; data: SearchResult[] | null };
const batch = (body: unknown, token = KEY) => call<Item[]>(s.url, "/v1/rag/search/batch", { token, body });

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${s.internalUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(name));
  return Number(line?.split(" ").at(-1) ?? 0);
}

describe("POST /v1/rag/search/batch", () => {
  it("answers every query in order, each like the single endpoint", async () => {
    const queries = PARAPHRASES.slice(0, 8).map((p) => ({
      knowledgeIds: [`kb_${p.kb}`],
      text: p.query,
      minSimilarity: 0.6,
    }));
    const r = await batch({ queries });
    expect(r.status).toBe(200);
    expect(r.body.code).toBe(200);
    const items = r.body.data as Item[];
    expect(items).toHaveLength(8);
    for (const [i, item] of items.entries()) {
      expect(item.code).toBe(200);
      expect(item.data?.[0]?.docsId).toBe(PARAPHRASES[i]?.docsId);
      const single = await call<SearchResult[]>(s.url, "/v1/rag/search", { token: KEY, body: queries[i] });
      expect(item.data).toEqual(single.body.data);
    }
  });

  it("embeds the batch's query texts in one model run", async () => {
    const before = await metric("capstan_search_embedding_batch_size_count");
    const sumBefore = await metric("capstan_search_embedding_batch_size_sum");
    const texts = [
      "batch probe one about parking",
      "batch probe two about volcanoes",
      "batch probe three about coffee",
    ];
    const r = await batch({ queries: texts.map((text) => ({ knowledgeIds: ["kb_handbook", "kb_science"], text })) });
    expect(r.status).toBe(200);
    expect((await metric("capstan_search_embedding_batch_size_count")) - before).toBe(1);
    expect((await metric("capstan_search_embedding_batch_size_sum")) - sumBefore).toBe(3);
  });

  it("gives a bad query its own error without failing the others", async () => {
    const r = await batch({
      queries: [
        { knowledgeIds: ["kb_science"], text: "What wiped out the dinosaurs?" },
        { knowledgeIds: ["kb_secret"], text: "out of scope" },
        { knowledgeIds: ["kb_science"], text: "" },
        "not an object",
        {
          knowledgeIds: ["kb_handbook"],
          text: "How many days off do I get each year?",
          maxResults: 1,
          minSimilarity: 0.6,
        },
      ],
    });
    expect(r.status).toBe(200);
    const [a, b, c, d, e] = r.body.data as Item[];
    expect(a?.code).toBe(200);
    expect(a?.data?.[0]?.docsId).toBe("dinosaurs");
    expect(b).toEqual({
      code: 400,
      message: expect.stringMatching(/knowledge id is invalid or permissions/),
      data: null,
    });
    expect(c).toEqual({ code: 400, message: expect.stringMatching(/queries\[2\]\.text/), data: null });
    expect(d).toEqual({ code: 400, message: expect.stringMatching(/queries\[3\]: must be a JSON object/), data: null });
    expect(e?.data).toHaveLength(1);
    expect(e?.data?.[0]?.docsId).toBe("vacation-policy");
  });

  it("fails the whole request for a bad envelope, a bad key or a fenced address", async () => {
    for (const [body, message] of [
      [{}, /queries: is required/],
      [{ queries: [] }, /queries: must hold at least one query/],
      [{ queries: Array.from({ length: 33 }, () => ({ knowledgeIds: ["kb_science"], text: "x" })) }, /at most 32/],
      [{ queries: "x" }, /queries/],
    ] as const) {
      const r = await batch(body);
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ code: 400, message: expect.stringMatching(message), data: null });
    }
    expect((await batch({ queries: [{ knowledgeIds: ["kb_science"], text: "x" }] }, "wrong")).status).toBe(401);
    const fenced = await batch({ queries: [{ knowledgeIds: ["kb_handbook"], text: "x" }] }, "key-fenced");
    expect(fenced.status).toBe(403);
    expect(fenced.body.data).toBeNull();
  });
});
