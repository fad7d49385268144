// The pluggable parts that talk to third parties, against local servers speaking their real wire
// protocols: an OpenAI-compatible /v1/embeddings provider (backed by the real local model, so
// vectors mean something) and a TEI-style /rerank reranker, including failures and fallbacks.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SearchResult } from "../../services/search/src/index.ts";
import { HANDBOOK } from "./corpus.ts";
import { call, ingest, knowledgeBase, localEmbedder, type Running, searchKey, startSearch } from "./helpers.ts";

const KEY = "cap_srch_providers";
const OPENAI_KEY = "sk-test-embeddings";
let server: Server;
let base: string;
const seen: { path: string; auth: string | undefined; body: Record<string, unknown> }[] = [];
let failNextEmbeddings = 0;
let rerankMode: "reverse" | "fail" = "reverse";

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as Record<string, unknown>;
  seen.push({ path: req.url ?? "", auth: req.headers.authorization, body });
  const send = (status: number, data: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(data));
  };
  if (req.url === "/v1/embeddings") {
    if (failNextEmbeddings > 0) {
      failNextEmbeddings--;
      return send(503, { error: { message: "overloaded" } });
    }
    const input = body.input as string[];
    const vectors = await (await localEmbedder()).embed(input);
    return send(200, {
      object: "list",
      model: body.model,
      data: vectors.map((v, index) => ({ object: "embedding", index, embedding: Array.from(v) })),
      usage: { prompt_tokens: 0, total_tokens: 0 },
    });
  }
  if (req.url === "/rerank") {
    if (rerankMode === "fail") return send(500, { error: "model crashed" });
    const texts = body.texts as string[];
    // Reverse the vector order: the last candidate gets the best score.
    return send(
      200,
      texts.map((_t, index) => ({ index, score: (index + 1) / (texts.length + 1) })),
    );
  }
  send(404, {});
}

beforeAll(async () => {
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe("OpenAI-compatible embeddings provider", () => {
  let s: Running;
  beforeAll(async () => {
    s = await startSearch({
      ownModel: true,
      kbs: [
        knowledgeBase("remote", { embedding: { provider: "openai", model: "fake-minilm", baseURL: `${base}/v1` } }),
        knowledgeBase("local"),
      ],
      keys: [searchKey("p", KEY, { knowledgeIds: ["kb_remote", "kb_local"] })],
      config: {
        embedding: { openai: { baseURL: `${base}/v1`, model: "fake-minilm", apiKey: OPENAI_KEY, dimensions: 384 } },
        // The fake provider listens on loopback, which the egress policy refuses unless listed.
        egressAllowedHosts: ["127.0.0.1"],
      },
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  it("embeds a knowledge base's documents and queries through /v1/embeddings, retrying a 503", async () => {
    seen.length = 0;
    failNextEmbeddings = 1;
    await ingest(s.internalUrl, "kb_remote", HANDBOOK.slice(0, 4));
    const info = await call(s.internalUrl, "/internal/v1/namespaces/default/knowledge-bases/kb_remote", {
      method: "PUT",
      token: "test-internal-token-0123456789",
      body: {},
    });
    expect(info.body.data).toMatchObject({ model: "openai:fake-minilm", dimensions: 384, documents: 4 });
    const calls = seen.filter((x) => x.path === "/v1/embeddings");
    expect(calls.length).toBeGreaterThanOrEqual(5); // 4 documents + the retried 503
    expect(calls.every((x) => x.auth === `Bearer ${OPENAI_KEY}` && x.body.model === "fake-minilm")).toBe(true);

    seen.length = 0;
    const r = await call<SearchResult[]>(s.url, "/v1/rag/search", {
      token: KEY,
      body: { knowledgeIds: ["kb_remote"], text: "I can't remember my login credentials", minSimilarity: 0.6 },
    });
    expect(r.body.data?.[0]?.docsId).toBe("password-reset");
    expect(seen.filter((x) => x.path === "/v1/embeddings")).toHaveLength(1);
  });

  it("embeds one query per model when knowledge bases use different models", async () => {
    await ingest(s.internalUrl, "kb_local", HANDBOOK.slice(4, 8));
    seen.length = 0;
    const r = await call<SearchResult[]>(s.url, "/v1/rag/search", {
      token: KEY,
      body: {
        knowledgeIds: ["kb_remote", "kb_local"],
        text: "What should I do when the fire alarm rings?",
        minSimilarity: 0,
        maxResults: 8,
      },
    });
    expect(r.body.data).toHaveLength(8);
    expect(r.body.data?.[0]?.docsId).toBe("fire-safety");
    expect(seen.filter((x) => x.path === "/v1/embeddings")).toHaveLength(1);
  });

  it("answers 503 in the envelope when the provider stays down", async () => {
    failNextEmbeddings = 10;
    const r = await call(s.url, "/v1/rag/search", {
      token: KEY,
      body: { knowledgeIds: ["kb_remote"], text: "a brand new question" },
    });
    failNextEmbeddings = 0;
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({
      code: 503,
      data: null,
      message: expect.stringMatching(/embedding provider unavailable/),
    });
    expect(r.body.message).not.toContain(OPENAI_KEY);
  });
});

describe("external /rerank reranker", () => {
  let s: Running;
  beforeAll(async () => {
    s = await startSearch({
      kbs: [knowledgeBase("handbook")],
      keys: [searchKey("p", KEY, { knowledgeIds: ["kb_handbook"] })],
      config: {
        rerank: { external: { url: base, style: "tei", timeoutMs: 5000 } },
        // The fake reranker listens on loopback, which the egress policy refuses unless listed.
        egressAllowedHosts: ["127.0.0.1"],
      },
    });
    await ingest(s.internalUrl, "kb_handbook", HANDBOOK.slice(0, 5));
  });
  afterAll(async () => {
    await s?.close();
  });

  const body = {
    knowledgeIds: ["kb_handbook"],
    text: "How many days off do I get each year?",
    minSimilarity: 0,
    maxResults: 5,
  };

  it("orders results by the reranker's rerankedScore while score stays the vector similarity", async () => {
    rerankMode = "reverse";
    seen.length = 0;
    const r = await call<SearchResult[]>(s.url, "/v1/rag/search", { token: KEY, body });
    const results = r.body.data as SearchResult[];
    const sent = seen.find((x) => x.path === "/rerank")?.body as { query: string; texts: string[] };
    expect(sent.query).toBe(body.text);
    // The reranker favoured the candidate the vector search ranked last.
    expect(results[0]?.text).toBe(sent.texts.at(-1));
    for (let i = 1; i < results.length; i++) {
      expect((results[i - 1] as SearchResult).rerankedScore).toBeGreaterThan(
        (results[i] as SearchResult).rerankedScore,
      );
    }
    expect(results.map((x) => x.score)).not.toEqual([...results.map((x) => x.score)].sort((a, b) => b - a));
  });

  it("falls back to the hybrid reranker when the reranker fails", async () => {
    rerankMode = "fail";
    const r = await call<SearchResult[]>(s.url, "/v1/rag/search", { token: KEY, body });
    expect(r.status).toBe(200);
    expect(r.body.data?.[0]?.docsId).toBe("vacation-policy");
    const metrics = await (await fetch(`${s.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/capstan_search_rerank_fallbacks_total 1/);
  });
});

describe("the egress policy for search's remote endpoints", () => {
  let s: Running;
  beforeAll(async () => {
    // The same loopback endpoints, with no allow-list: the default of a cluster install.
    s = await startSearch({
      kbs: [knowledgeBase("handbook")],
      keys: [searchKey("p", KEY, { knowledgeIds: ["kb_handbook"] })],
      config: {
        rerank: { external: { url: base, style: "tei", timeoutMs: 5000 } },
        embedding: { openai: { baseURL: `${base}/v1`, model: "fake-minilm", apiKey: OPENAI_KEY, dimensions: 384 } },
      },
    });
    await ingest(s.internalUrl, "kb_handbook", HANDBOOK.slice(0, 5));
  });
  afterAll(async () => {
    await s?.close();
  });

  it("never sends to a loopback reranker or embeddings endpoint that the allow-list does not name", async () => {
    rerankMode = "reverse";
    seen.length = 0;
    const r = await call<SearchResult[]>(s.url, "/v1/rag/search", {
      token: KEY,
      body: { knowledgeIds: ["kb_handbook"], text: "How many days off do I get each year?", minSimilarity: 0 },
    });
    // The refused reranker is a failed one: the hybrid reranker answers instead.
    expect(r.status).toBe(200);
    expect(r.body.data?.[0]?.docsId).toBe("vacation-policy");
    expect(seen).toEqual([]);
    const metrics = await (await fetch(`${s.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/capstan_search_rerank_fallbacks_total 1/);
  });
});
