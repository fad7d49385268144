// What the reference's LLM_* / MODEL_* / SEARCH_* variables do: LLM-assisted extraction and
// web search through a SearXNG-compatible endpoint with embedding re-ranking. The provider
// and the metasearch service are fakes on loopback speaking their real wire protocols.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { type Json, post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

let site: Site;
let provider: Server;
let searx: Server;
let providerUrl: string;
let searxUrl: string;
const seen: { auth?: string | undefined; model?: string; embedModel?: string; query?: URLSearchParams } = {};
const scrapers: Scraper[] = [];

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function readJson(req: import("node:http").IncomingMessage): Promise<Json> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

beforeAll(async () => {
  site = await startSite();
  site.route(
    "/product",
    "<html><head><title>Rope</title></head><body><h1>Rope 12mm</h1><p>Price: 9 EUR</p></body></html>",
  );
  site.route("/other", "<html><head><title>Other</title></head><body><h1>Unrelated</h1></body></html>");
  // OpenAI-compatible provider: answers from the markdown it was given.
  provider = createServer(async (req, res) => {
    seen.auth = req.headers.authorization;
    const body = await readJson(req);
    res.writeHead(200, { "content-type": "application/json" });
    if (req.url === "/v1/chat/completions") {
      seen.model = body.model;
      const page = body.messages[1].content as string;
      const heading = /^# (.+)$/m.exec(page)?.[1] ?? null;
      res.end(
        JSON.stringify({
          id: "chatcmpl-1",
          object: "chat.completion",
          created: 1,
          model: body.model,
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: JSON.stringify({ name: heading }) },
              finish_reason: "stop",
            },
          ],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    } else if (req.url === "/v1/embeddings") {
      seen.embedModel = body.model;
      // Texts mentioning rope point one way, others the other way.
      const data = (body.input as string[]).map((t, index) => ({
        object: "embedding",
        index,
        embedding: /rope/i.test(t) ? [1, 0] : [0, 1],
      }));
      res.end(JSON.stringify({ object: "list", data, model: body.model }));
    } else {
      res.writeHead(404).end();
    }
  });
  providerUrl = await listen(provider);
  // SearXNG-compatible search: GET /search?q=...&format=json.
  searx = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    seen.query = url.searchParams;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        query: url.searchParams.get("q"),
        results: [
          { url: `${site.origin}/other`, title: "Other", content: "Nothing to see", engine: "bing" },
          { url: `${site.origin}/product`, title: "Rope 12mm", content: "Rope for sailing", engine: "duckduckgo" },
          { url: "javascript:alert(1)", title: "bad", content: "" },
        ],
      }),
    );
  });
  searxUrl = await listen(searx);
});

afterAll(async () => {
  await Promise.all(scrapers.map((s) => s.close()));
  provider?.close();
  searx?.close();
  await site?.close();
});

/** A scraper for one test (closed when the test ends), or for the file with `{ scoped: false }`. */
async function scraperWith(overrides: Record<string, unknown>, opts: { scoped?: boolean } = {}): Promise<Scraper> {
  const s = await startScraper({ allowedHosts: [`127.0.0.1:${site.port}`], ...overrides });
  if (opts.scoped === false) scrapers.push(s);
  else onTestFinished(() => s.close());
  return s;
}

describe("LLM extraction (LLM_API_KEY, LLM_BASE_URL, MODEL_NAME)", () => {
  it("sends the page markdown to the provider and returns its JSON", async () => {
    const s = await scraperWith({ llm: { apiKey: "sk-test-123", baseURL: `${providerUrl}/v1`, model: "tiny-chat" } });
    const res = await post(s.url, "/scrape", {
      url: `${site.origin}/product`,
      extractorOptions: {
        mode: "llm-extraction",
        extractionPrompt: "Name the product",
        extractionSchema: { type: "object" },
      },
    });
    expect(res.status).toBe(200);
    expect((res.body.data as Json).llm_extraction).toEqual({ name: "Rope 12mm" });
    expect(seen.auth).toBe("Bearer sk-test-123");
    expect(seen.model).toBe("tiny-chat");
  });

  it("uses LOCAL_MODEL_BASE_URL without a key", async () => {
    const s = await scraperWith({ llm: { localModelBaseURL: `${providerUrl}/v1` } });
    const res = await post(s.url, "/scrape", {
      url: `${site.origin}/product`,
      extractorOptions: { mode: "llm-extraction" },
    });
    expect(res.status).toBe(200);
    expect(seen.auth).toBeUndefined();
  });

  it("answers 501 when no provider is configured", async () => {
    const s = await scraperWith({});
    const res = await post(s.url, "/scrape", {
      url: `${site.origin}/product`,
      extractorOptions: { mode: "llm-extraction" },
    });
    expect(res.status).toBe(501);
    expect(res.body).toMatchObject({ success: false, code: "FEATURE_DISABLED" });
  });
});

describe("web search (SEARCH_ENDPOINT, SEARCH_ENGINES, SEARCH_CATEGORIES)", () => {
  it("queries the metasearch service, re-ranks by embeddings and scrapes the results", async () => {
    const s = await scraperWith({
      search: { endpoint: searxUrl, engines: ["duckduckgo", "bing"], categories: ["general"] },
      llm: { apiKey: "sk-test-123", baseURL: `${providerUrl}/v1`, embeddingModel: "tiny-embed" },
    });
    const res = await post(s.url, "/search", { query: "rope", limit: 2, scrape: true });
    expect(res.status).toBe(200);
    expect(seen.query?.get("q")).toBe("rope");
    expect(seen.query?.get("format")).toBe("json");
    expect(seen.query?.get("engines")).toBe("duckduckgo,bing");
    expect(seen.query?.get("categories")).toBe("general");
    expect(seen.embedModel).toBe("tiny-embed");
    const data = res.body.data as Json[];
    expect(data.map((d) => d.url)).toEqual([`${site.origin}/product`, `${site.origin}/other`]);
    expect(data[0].page).toMatchObject({ success: true });
    expect(data[0].page.data.metadata.title).toBe("Rope");
  });

  it("answers 501 without SEARCH_ENDPOINT", async () => {
    const s = await scraperWith({});
    const res = await post(s.url, "/search", { query: "rope" });
    expect(res.status).toBe(501);
    expect(res.body).toMatchObject({ success: false, code: "FEATURE_DISABLED" });
  });
});
