// The internal documents API, driven through the typed client (@capstan/shared/clients/search-client)
// against the real service: collections, chunking from the KnowledgeBase spec, idempotent
// re-ingestion that replaces a document's chunks, deletes, persistence across a restart, auth.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SearchApiError, SearchClient } from "@capstan/shared/clients/search-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, INTERNAL_TOKEN, knowledgeBase, type Running, searchKey, startSearch } from "./helpers.ts";

/** A knowledge base of the test's namespace, as the documents API addresses it. */
const ref = (knowledgeId: string) => ({ namespace: "default", knowledgeId });

/** The serving vector set's model, as the documents API names it. */
const MINILM = "local:all-MiniLM-L6-v2";
/** Where kb_manual's vectors live (the embedded store): PUT and GET name the same vector set. */
const MANUAL_LAYOUT = {
  collection: "default.kb_manual",
  vectors: { backend: "embedded", size: 384, distance: "Cosine", hnsw: { m: 16, efConstruct: 128, efSearch: 256 } },
};

const KEY = "cap_srch_docs_key";
const dataDir = mkdtempSync(join(tmpdir(), "capstan-search-docs-"));
const kbs = [knowledgeBase("manual", { chunking: { size: 200, overlap: 40 } }), knowledgeBase("notes")];
const keys = [searchKey("docs", KEY, { knowledgeIds: ["kb_manual", "kb_notes"] })];
let s: Running;
let client: SearchClient;

const LONG = Array.from(
  { length: 12 },
  (_, i) =>
    `Section ${i + 1}. The pump model P${100 + i} needs its filter cleaned every ${i + 2} weeks to keep water pressure stable.`,
).join("\n\n");

beforeAll(async () => {
  s = await startSearch({ kbs, keys, config: { dataDir } });
  // The internal token searches on the internal port only.
  client = new SearchClient({
    baseURL: s.internalUrl,
    token: INTERNAL_TOKEN,
    namespace: "default",
    timeoutMs: 60_000,
  });
});
afterAll(async () => {
  await s?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const search = (text: string, knowledgeIds = ["kb_manual"]) =>
  client.search({ knowledgeIds, text, minSimilarity: 0, maxResults: 100 });

describe("documents API", () => {
  it("creates a collection with the KnowledgeBase's chunking, idempotently", async () => {
    const a = await client.ensureKnowledgeBase(ref("kb_manual"));
    const b = await client.ensureKnowledgeBase(ref("kb_manual"));
    expect(a).toMatchObject({
      knowledgeId: "kb_manual",
      model: "local:all-MiniLM-L6-v2",
      dimensions: 384,
      chunking: { size: 200, overlap: 40 },
      documents: 0,
      chunks: 0,
    });
    expect(b).toEqual(a);
    expect(await client.getKnowledgeBase(ref("kb_manual"))).toEqual({
      knowledgeId: "kb_manual",
      model: MINILM,
      dimensions: 384,
      documents: 0,
      chunks: 0,
      ...MANUAL_LAYOUT,
    });
    expect(await client.getKnowledgeBase(ref("kb_notes"))).toBeUndefined();
  });

  it("chunks, embeds and stores a document with chunkIndex/totalChunks", async () => {
    const r = await client.upsertDocument(ref("kb_manual"), "pumps", {
      docsName: "Pump manual",
      text: LONG,
      metadata: { lang: "en" },
    });
    expect(r.chunks).toBeGreaterThan(5);
    const hits = await search("how often should the P105 filter be cleaned");
    expect(hits).toHaveLength(r.chunks);
    for (const h of hits) {
      expect(h.text.length).toBeLessThanOrEqual(200);
      expect(h.metadata).toMatchObject({ docsId: "pumps", docsName: "Pump manual", totalChunks: r.chunks, lang: "en" });
    }
    expect(new Set(hits.map((h) => h.metadata.chunkIndex))).toEqual(
      new Set(Array.from({ length: r.chunks }, (_, i) => i)),
    );
    expect(hits[0]?.text).toContain("P105");
    expect(await client.getKnowledgeBase(ref("kb_manual"))).toEqual({
      knowledgeId: "kb_manual",
      model: MINILM,
      dimensions: 384,
      documents: 1,
      chunks: r.chunks,
      ...MANUAL_LAYOUT,
    });
  });

  it("re-ingesting the same document is idempotent; a changed one replaces its chunks, leaving nothing orphaned", async () => {
    const before = await search("pump filter");
    const again = await client.upsertDocument(ref("kb_manual"), "pumps", {
      docsName: "Pump manual",
      text: LONG,
      metadata: { lang: "en" },
    });
    const after = await search("pump filter");
    expect(after.map((h) => h.embeddingId).sort()).toEqual(before.map((h) => h.embeddingId).sort());
    expect(again.chunks).toBe(before.length);

    const changed = await client.upsertDocument(ref("kb_manual"), "pumps", {
      docsName: "Pump manual v2",
      text: "The pump needs no maintenance at all any more.",
    });
    expect(changed.chunks).toBe(1);
    const hits = await search("pump filter");
    expect(hits).toHaveLength(1);
    expect(hits[0]).toMatchObject({ docsName: "Pump manual v2", metadata: { chunkIndex: 0, totalChunks: 1 } });
    expect(await client.getKnowledgeBase(ref("kb_manual"))).toEqual({
      knowledgeId: "kb_manual",
      model: MINILM,
      dimensions: 384,
      documents: 1,
      chunks: 1,
      ...MANUAL_LAYOUT,
    });
  });

  it("creates the collection on first upsert and deletes documents", async () => {
    await client.upsertDocument(ref("kb_notes"), "n1", {
      docsName: "Note 1",
      text: "Bring the blue umbrella to the meeting.",
    });
    await client.upsertDocument(ref("kb_notes"), "n2", {
      docsName: "Note 2",
      text: "The train to Lyon leaves at nine.",
    });
    expect(await client.getKnowledgeBase(ref("kb_notes"))).toMatchObject({ documents: 2, chunks: 2 });
    expect(await client.deleteDocument(ref("kb_notes"), "n1")).toMatchObject({ deleted: 1 });
    expect(await client.deleteDocument(ref("kb_notes"), "n1")).toMatchObject({ deleted: 0 });
    const hits = await search("umbrella", ["kb_notes"]);
    expect(hits.map((h) => h.docsId)).toEqual(["n2"]);
    const empty = await client.upsertDocument(ref("kb_notes"), "n2", { docsName: "Note 2", text: "   " });
    expect(empty.chunks).toBe(0);
    expect(await client.getKnowledgeBase(ref("kb_notes"))).toMatchObject({ documents: 0, chunks: 0 });
  });

  it("keeps everything across a restart (embedded store persisted in CAPSTAN_DATA_DIR)", async () => {
    await client.upsertDocument(ref("kb_manual"), "extra", {
      docsName: "Extra",
      text: "Volcanic ash can damage the pump intake.",
    });
    await s.close();
    s = await startSearch({ kbs, keys, config: { dataDir } });
    client = new SearchClient({
      baseURL: s.internalUrl,
      token: INTERNAL_TOKEN,
      namespace: "default",
      timeoutMs: 60_000,
    });
    expect(await client.getKnowledgeBase(ref("kb_manual"))).toEqual({
      knowledgeId: "kb_manual",
      model: MINILM,
      dimensions: 384,
      documents: 2,
      chunks: 2,
      ...MANUAL_LAYOUT,
    });
    const hits = await new SearchClient({ baseURL: s.url, token: KEY }).search({
      knowledgeIds: ["kb_manual"],
      text: "ash from a volcano harming the pump",
      minSimilarity: 0.6,
    });
    expect(hits[0]?.docsId).toBe("extra");
  });

  it("drops a knowledge base's vectors, idempotently", async () => {
    expect(await client.deleteKnowledgeBase(ref("kb_notes"))).toMatchObject({ deleted: true });
    expect(await client.deleteKnowledgeBase(ref("kb_notes"))).toMatchObject({ deleted: false });
    expect(await client.getKnowledgeBase(ref("kb_notes"))).toBeUndefined();
  });

  it("guards the internal API with the internal token only", async () => {
    const withKey = new SearchClient({ baseURL: s.url, internalURL: s.internalUrl, token: KEY, maxRetries: 0 });
    const err = await withKey.ensureKnowledgeBase(ref("kb_manual")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SearchApiError);
    expect((err as SearchApiError).status).toBe(401);
    expect((err as SearchApiError).message).not.toContain(KEY);
    const none = await call(s.internalUrl, "/internal/v1/namespaces/default/knowledge-bases/kb_manual", {
      method: "GET",
    });
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ code: 401, data: null });
  });

  it("answers bad input with 400 envelopes", async () => {
    const put = (path: string, body: unknown) =>
      call(s.internalUrl, `/internal/v1/namespaces/default/knowledge-bases/${path}`, {
        method: "PUT",
        token: INTERNAL_TOKEN,
        body,
      });
    expect((await put("Not-An-Id", {})).body.message).toMatch(/knowledgeId: must be a knowledge id/);
    expect((await put("kb_manual", { chunking: { size: 100, overlap: 100 } })).body.message).toMatch(/chunking/);
    expect((await put("kb_manual", { embedding: { provider: "local", model: "bge-huge" } })).body.message).toMatch(
      /embedding: model local:bge-huge is not available/,
    );
    expect((await put("kb_manual/documents/d1", { text: "x" })).body.message).toMatch(/docsName: is required/);
    expect((await put("kb_manual/documents/d1", { docsName: "x", text: 5 })).status).toBe(400);
    expect((await put("kb_manual/documents/d1", { docsName: "x", text: "y", metadata: { a: { b: 1 } } })).status).toBe(
      400,
    );
  });

  it("refuses a bad path param, query or body by its route schema, in the envelope naming the field", async () => {
    const at = (path: string, method: string, body?: unknown, raw?: string) =>
      call(s.internalUrl, `/internal/v1/namespaces/${path}`, {
        method,
        token: INTERNAL_TOKEN,
        ...(body !== undefined ? { body } : {}),
        ...(raw !== undefined ? { raw } : {}),
      });
    const cases: [Promise<Awaited<ReturnType<typeof at>>>, RegExp][] = [
      [
        at("Not_A_Namespace/knowledge-bases/kb_manual", "GET"),
        /^invalid request body: namespace: must be a Kubernetes/,
      ],
      [at("default/knowledge-bases/kb_manual/documents/%20lead", "DELETE"), /: docsId: must be 1-512 characters/],
      [at("default/knowledge-bases/kb_manual/documents?limit=0", "GET"), /: query\.limit: must be at least 1$/],
      [at("default/knowledge-bases/kb_manual/documents?source=a%20b", "GET"), /: query\.source: must be 1-128/],
      [at("default/knowledge-bases/kb_manual/carry-uploads", "POST", { limit: 1000 }), /: limit: must be at most 256$/],
      [at("default/knowledge-bases/kb_manual/prune", "POST", { sources: [] }), /: refresh: is required$/],
      [at("default/knowledge-bases/kb_manual/prune", "POST", undefined, "[1]"), /: body: must be a JSON object$/],
      [at("default/knowledge-bases/kb_manual/switch", "POST", { model: "" }), /: model: /],
    ];
    for (const [pending, message] of cases) {
      const r = await pending;
      expect(r.status, String(message)).toBe(400);
      expect(r.headers.get("x-capstan-error")).toBe("SEARCH_ERR_BODY_INVALID");
      expect(r.body).toMatchObject({ code: 400, data: null });
      expect(r.body.message).toMatch(message);
    }
    // Routes whose every body field is optional take no body at all (the defaults apply).
    const created = await at("default/knowledge-bases/kb_notes", "PUT");
    expect(created.status).toBe(200);
    expect(created.body.data).toMatchObject({ knowledgeId: "kb_notes", chunking: { size: 800, overlap: 100 } });
    const noBody = await at("default/knowledge-bases/kb_notes/carry-uploads", "POST");
    expect(noBody.body).toMatchObject({ code: 200, data: { knowledgeId: "kb_notes", uploads: 0, carried: 0 } });
  });

  it("switches vector sets only to one being built, with clear errors otherwise", async () => {
    const post = (path: string, body: unknown) =>
      call(s.internalUrl, `/internal/v1/namespaces/default/knowledge-bases/${path}/switch`, {
        token: INTERNAL_TOKEN,
        body,
      });
    expect((await post("kb_manual", { model: 5 })).status).toBe(400);
    const wrong = await post("kb_manual", { model: "local:bge-huge" });
    expect(wrong.status).toBe(404);
    expect(wrong.body.message).toMatch(/no vector set of model local:bge-huge being built for kb_manual/);
    expect((await post("kb_never", {})).status).toBe(404);
    // Asked again after a switch (or with nothing to build): the serving model, switched false.
    expect(await client.switchKnowledgeBase(ref("kb_manual"), MINILM)).toEqual({
      knowledgeId: "kb_manual",
      model: MINILM,
      dimensions: 384,
      switched: false,
    });
  });
});
