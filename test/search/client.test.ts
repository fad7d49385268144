// The typed search client against a real HTTP server that misbehaves on purpose: what is its own
// (status and registry code mapping, answers checked against the wire schema, the namespace header,
// no token in errors) and that it runs through the shared resilience policy (whose retry, backoff
// and Retry-After behaviour is tested once, in services/shared/src/resilience/policy.test.ts).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createRegistry, outboundMetrics } from "@capstan/shared";
import { SearchApiError, SearchClient } from "@capstan/shared/clients/search-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** A knowledge base as the documents API addresses it. */
const ref = (knowledgeId: string) => ({ namespace: "default", knowledgeId });

type Handler = (req: IncomingMessage, res: ServerResponse, n: number) => void;
let server: Server;
let url: string;
let handler: Handler = () => {};
let hits = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    hits++;
    req.resume();
    req.on("end", () => handler(req, res, hits));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function reply(res: ServerResponse, status: number, body: unknown, code?: string) {
  res.writeHead(status, { "content-type": "application/json", ...(code ? { "x-capstan-error": code } : {}) });
  res.end(JSON.stringify(body));
}

const TOKEN = "secret-token-never-in-errors";

describe("SearchClient", () => {
  it("retries 5xx through the shared policy, metered per operation, then succeeds", async () => {
    hits = 0;
    handler = (_req, res, n) =>
      n < 3
        ? reply(res, 503, { code: 503, message: "busy", data: null })
        : reply(res, 200, { code: 200, message: "success", data: [] });
    const registry = createRegistry({ defaultMetrics: false });
    const metrics = outboundMetrics(registry, "client_test");
    const client = new SearchClient({ baseURL: url, token: TOKEN, retryBaseMs: 5, metrics });
    expect(await client.search({ knowledgeIds: ["kb_a"], text: "x" })).toEqual([]);
    expect(hits).toBe(3);
    const attempts = await registry.getSingleMetric("client_test_outbound_requests_total")?.get();
    const count = (outcome: string) =>
      attempts?.values.find((v) => v.labels.target === "search" && v.labels.outcome === outcome)?.value;
    expect([count("http_503"), count("ok")]).toEqual([2, 1]);
  });

  it("gives up after maxRetries with the last error", async () => {
    hits = 0;
    handler = (_req, res) => reply(res, 502, { code: 502, message: "bad gateway", data: null });
    const client = new SearchClient({ baseURL: url, token: TOKEN, retryBaseMs: 5, maxRetries: 2 });
    const err = (await client.search({ knowledgeIds: ["kb_a"], text: "x" }).catch((e: unknown) => e)) as SearchApiError;
    expect(err).toBeInstanceOf(SearchApiError);
    expect(err.status).toBe(502);
    expect(hits).toBe(3);
  });

  it("checks search answers against the wire schema (no retry: it would not change)", async () => {
    hits = 0;
    handler = (_req, res) => reply(res, 200, { code: 200, message: "success", data: [{ text: "no ids" }] });
    const client = new SearchClient({ baseURL: url, token: TOKEN, retryBaseMs: 5 });
    const err = (await client.search({ knowledgeIds: ["kb_a"], text: "x" }).catch((e: unknown) => e)) as SearchApiError;
    expect(err).toBeInstanceOf(SearchApiError);
    expect(err.message).toMatch(/schema/);
    expect(hits).toBe(1);
  });

  it("parses every documents API answer by its wire schema: a malformed one is a clear, unretried error", async () => {
    const client = new SearchClient({ baseURL: url, token: TOKEN, retryBaseMs: 5 });
    const calls: [string, () => Promise<unknown>, RegExp][] = [
      ["ensure_kb", () => client.ensureKnowledgeBase(ref("kb_a")), /data\.documents: /],
      ["get_kb", () => client.getKnowledgeBase(ref("kb_a")), /data\.documents: /],
      ["upsert_document", () => client.upsertDocument(ref("kb_a"), "d1", { docsName: "d", text: "t" }), /data\./],
      ["list_ingested", () => client.ingestedDocuments(ref("kb_a")), /data\.documents: /],
      [
        "prune_documents",
        () => client.pruneDocuments(ref("kb_a"), { refresh: "r", sources: [], complete: [] }),
        /data\.deleted: /,
      ],
      ["switch_kb", () => client.switchKnowledgeBase(ref("kb_a")), /data\./],
      ["carry_uploads", () => client.carryUploads(ref("kb_a")), /data\./],
      ["delete_kb", () => client.deleteKnowledgeBase(ref("kb_a")), /data\.deleted: /],
      ["delete_document", () => client.deleteDocument(ref("kb_a"), "d1"), /data\./],
      ["list_documents", () => client.listDocuments("kb_a"), /data\./],
    ];
    for (const [operation, run, where] of calls) {
      hits = 0;
      // A knowledge id alone: every answer's other fields are missing.
      handler = (_req, res) => reply(res, 200, { code: 200, message: "success", data: { knowledgeId: "kb_a" } });
      const err = (await run().catch((e: unknown) => e)) as SearchApiError;
      expect(err, operation).toBeInstanceOf(SearchApiError);
      expect(err.operation).toBe(operation);
      expect(err.code).toBe("SEARCH_CLIENT_MALFORMED");
      expect(err.message).toMatch(/answer does not match the search API's schema: /);
      expect(err.message).toMatch(where);
      expect(hits).toBe(1);
    }
  });

  it("sends the per-call namespace over the client's", async () => {
    let seen: string | undefined;
    handler = (req, res) => {
      seen = req.headers["x-capstan-namespace"] as string | undefined;
      reply(res, 200, { code: 200, message: "success", data: [] });
    };
    const client = new SearchClient({ baseURL: url, token: TOKEN, namespace: "client-ns" });
    await client.search({ knowledgeIds: ["kb_a"], text: "x" });
    expect(seen).toBe("client-ns");
    await client.search({ knowledgeIds: ["kb_a"], text: "x" }, { namespace: "call-ns" });
    expect(seen).toBe("call-ns");
  });

  it("does not retry a 4xx and carries the registry code", async () => {
    hits = 0;
    handler = (_req, res) =>
      reply(
        res,
        400,
        { code: 400, message: "knowledge id is invalid or permissions are insufficient: kb_a", data: null },
        "SEARCH_ERR_KNOWLEDGE_ID",
      );
    const client = new SearchClient({ baseURL: url, token: TOKEN, retryBaseMs: 5 });
    const err = (await client.search({ knowledgeIds: ["kb_a"], text: "x" }).catch((e: unknown) => e)) as SearchApiError;
    expect(err.status).toBe(400);
    expect(err.code).toBe("SEARCH_ERR_KNOWLEDGE_ID");
    expect(err.message).toMatch(/permissions are insufficient/);
    expect(hits).toBe(1);
  });

  it("times out a hanging call and retries it", async () => {
    hits = 0;
    handler = (_req, res, n) => {
      if (n === 1) return; // never answers
      reply(res, 200, { code: 200, message: "success", data: { knowledgeId: "kb_a", documents: 1, chunks: 2 } });
    };
    const registry = createRegistry({ defaultMetrics: false });
    const metrics = outboundMetrics(registry, "client_test");
    const client = new SearchClient({ baseURL: url, token: TOKEN, timeoutMs: 1500, retryBaseMs: 5, metrics });
    expect(await client.getKnowledgeBase(ref("kb_a"))).toEqual({ knowledgeId: "kb_a", documents: 1, chunks: 2 });
    const attempts = await registry.getSingleMetric("client_test_outbound_requests_total")?.get();
    expect(attempts?.values.map((v) => [v.labels.target, v.labels.outcome, v.value])).toEqual([
      ["search_get_kb", "timeout", 1],
      ["search_get_kb", "ok", 1],
    ]);
  });

  it("reports an unreachable service without the token", async () => {
    const client = new SearchClient({ baseURL: "http://127.0.0.1:1", token: TOKEN, retryBaseMs: 5, maxRetries: 1 });
    const err = (await client.deleteDocument(ref("kb_a"), "d").catch((e: unknown) => e)) as SearchApiError;
    expect(err.status).toBe(0);
    expect(err.retryable).toBe(true);
    expect(String(err.message)).not.toContain(TOKEN);
  });

  it("sends the bearer token and JSON, and splits batch answers per query", async () => {
    let seen: { auth?: string; type?: string; path?: string } = {};
    handler = (req, res) => {
      seen = { auth: req.headers.authorization, type: req.headers["content-type"], path: req.url };
      reply(res, 200, {
        code: 200,
        message: "success",
        data: [
          { code: 200, message: "success", data: [] },
          { code: 400, message: "bad", data: null },
        ],
      });
    };
    const client = new SearchClient({ baseURL: `${url}/`, token: TOKEN });
    const [a, b] = await client.searchBatch([
      { knowledgeIds: ["kb_a"], text: "x" },
      { knowledgeIds: [], text: "" },
    ]);
    expect(seen).toEqual({ auth: `Bearer ${TOKEN}`, type: "application/json", path: "/v1/rag/search/batch" });
    expect(a).toEqual([]);
    expect(b).toBeInstanceOf(SearchApiError);
    expect((b as SearchApiError).status).toBe(400);
  });
});
