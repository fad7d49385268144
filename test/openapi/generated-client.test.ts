// A client generated from the published documents (openapi-typescript types from
// docs/openapi/{scraper,search}.json, openapi-fetch at run time) against the running services: the
// scraper with auth on and a real Chromium scrapes a loopback page, its markdown is ingested into a
// real search (real embedding model), and search finds it with a real SearchKey. Success and error
// answers are read through the generated types: the expectTypeOf lines are checked by tsc (npm
// run typecheck), the expect lines at run time.
import createClient from "openapi-fetch";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import type { paths as ScraperPaths, components as ScraperTypes } from "../../docs/openapi/scraper.d.ts";
import type { paths as SearchPaths, components as SearchTypes } from "../../docs/openapi/search.d.ts";
import { type Scraper, type Site, startScraper, startSite } from "../scraper/helpers.ts";
import { ingest, knowledgeBase, type Running, searchKey, startSearch } from "../search/helpers.ts";

const SCRAPER_KEY = "cap_scr_generated-client-key";
const SEARCH_KEY = "cap_srch_generated_client_key";
const PAGE = `<html lang="en"><head><title>Lighthouse keeping</title>
<meta name="description" content="How the keeper tends the lamp"></head>
<body><main><h1>Tending the lamp</h1>
<p>The lighthouse keeper trims the wick of the lamp every evening at dusk and polishes the great
Fresnel lens each morning, so that ships at sea can see the light from twenty nautical miles away.</p>
</main></body></html>`;

let site: Site;
let scraper: Scraper;
let search: Running;

beforeAll(async () => {
  site = await startSite();
  site.route("/lighthouse", PAGE);
  [scraper, search] = await Promise.all([
    startScraper({ authEnabled: true, apiKey: SCRAPER_KEY, allowedHosts: [`127.0.0.1:${site.port}`] }),
    startSearch({
      kbs: [knowledgeBase("pages"), knowledgeBase("elsewhere")],
      keys: [searchKey("generated-client", SEARCH_KEY, { knowledgeIds: ["kb_pages"] })],
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([scraper?.close(), search?.close()]);
  await site?.close();
});

const scraperClient = (key = SCRAPER_KEY) =>
  createClient<ScraperPaths>({ baseUrl: scraper.url, headers: { authorization: `Bearer ${key}` } });
const searchClient = (key = SEARCH_KEY) =>
  createClient<SearchPaths>({ baseUrl: search.url, headers: { authorization: `Bearer ${key}` } });

describe("a client generated from the scraper's document", () => {
  it("scrapes a page with real Chromium; the answer has the document's types", async () => {
    const { data, error, response } = await scraperClient().POST("/scrape", {
      body: { url: `${site.origin}/lighthouse`, pageOptions: { includeHtml: false }, extractors: { heading: "h1" } },
    });
    expectTypeOf(data).toEqualTypeOf<ScraperTypes["schemas"]["ScrapeResponse"] | undefined>();
    expectTypeOf(error).toEqualTypeOf<ScraperTypes["schemas"]["ScraperError"] | undefined>();
    expect(response.status).toBe(200);
    expect(error).toBeUndefined();
    if (!data) throw new Error("no data");
    // Optional in the document: `formats` may leave it out (without formats it is always there).
    expectTypeOf(data.data.markdown).toEqualTypeOf<string | undefined>();
    expectTypeOf(data.data.metadata.statusCode).toEqualTypeOf<number>();
    expect(data.success).toBe(true);
    expect(data.data.markdown).toContain("Fresnel lens");
    expect(data.data.html).toBeNull();
    expect(data.data.screenshot).toBeNull();
    expect(data.data.metadata).toMatchObject({ title: "Lighthouse keeping", language: "en", statusCode: 200 });
    expect(data.data.extracted).toEqual({ heading: "Tending the lamp" });
  });

  it("bulk: each URL's entry narrows on `success` to its page or its own error", async () => {
    const { data } = await scraperClient().POST("/scrape/bulk", {
      body: { urls: [`${site.origin}/lighthouse`, "http://10.0.0.1/private"] },
    });
    if (!data) throw new Error("no data");
    expect(data).toMatchObject({ success: true, total: 2, succeeded: 1, failed: 1 });
    const [page, blocked] = data.data;
    if (!page?.success || blocked?.success !== false) throw new Error("unexpected outcomes");
    expectTypeOf(page.data.markdown).toEqualTypeOf<string | undefined>();
    expectTypeOf(blocked.code).toEqualTypeOf<ScraperTypes["schemas"]["ScraperError"]["code"]>();
    expect(page.data.metadata.title).toBe("Lighthouse keeping");
    expect(blocked).toMatchObject({ code: "BLOCKED_TARGET", status: 403 });
  });

  it("errors come back as the document's ScraperError: no key, a bad body", async () => {
    const unauthorised = await scraperClient("not-the-key").POST("/scrape", { body: { url: `${site.origin}/` } });
    expect(unauthorised.response.status).toBe(401);
    expect(unauthorised.error).toMatchObject({ success: false, code: "UNAUTHORIZED" });
    const bad = await scraperClient().POST("/scrape", {
      // @ts-expect-error waitFor is an integer in the document; the service must refuse it too
      body: { url: `${site.origin}/lighthouse`, pageOptions: { waitFor: "soon" } },
    });
    expect(bad.response.status).toBe(400);
    expect(bad.error?.code).toBe("BAD_REQUEST");
    expect(bad.error?.error).toContain("pageOptions.waitFor");
  });

  it("GET /health needs no key", async () => {
    const { data } = await createClient<ScraperPaths>({ baseUrl: scraper.url }).GET("/health", {});
    expectTypeOf(data).toEqualTypeOf<ScraperTypes["schemas"]["Health"] | undefined>();
    expect(data).toMatchObject({ status: "ok", service: "capstan-scraper" });
  });
});

describe("a client generated from search's document", () => {
  beforeAll(async () => {
    // The scraped page, ingested through the documents API (internal, not in the document).
    const { data } = await scraperClient().POST("/scrape", { body: { url: `${site.origin}/lighthouse` } });
    if (!data) throw new Error("scrape failed");
    await ingest(search.internalUrl, "kb_pages", [
      { docsId: "lighthouse", docsName: data.data.metadata.title, text: data.data.markdown ?? "" },
    ]);
  });

  it("searches with a real SearchKey and reads typed results", async () => {
    const { data, response } = await searchClient().POST("/v1/rag/search", {
      body: { knowledgeIds: ["kb_pages"], text: "who polishes the lens of the lighthouse?", minSimilarity: 0.3 },
    });
    expect(response.status).toBe(200);
    if (!data?.data) throw new Error("no results");
    expectTypeOf(data.code).toEqualTypeOf<number>();
    expectTypeOf(data.data[0]?.score).toEqualTypeOf<number | undefined>();
    expectTypeOf(data.data[0]?.metadata.chunkIndex).toEqualTypeOf<number | undefined>();
    expect(data.code).toBe(200);
    const [first] = data.data;
    expect(first).toMatchObject({ knowledgeId: "kb_pages", docsId: "lighthouse", docsName: "Lighthouse keeping" });
    expect(first?.score).toBeGreaterThan(0.3);
    expect(first?.text).toContain("Fresnel");
    expect(first?.metadata.chunkIndex).toBe(0);
  });

  it("batch answers one envelope per query; errors are the {code, message, data: null} envelope", async () => {
    const batch = await searchClient().POST("/v1/rag/search/batch", {
      body: {
        queries: [
          { knowledgeIds: ["kb_pages"], text: "trimming the wick at dusk", minSimilarity: 0.3 },
          { knowledgeIds: ["kb_elsewhere"], text: "out of scope" },
        ],
      },
    });
    expect(batch.response.status).toBe(200);
    const [found, refused] = batch.data?.data ?? [];
    expect(found?.data?.[0]?.docsId).toBe("lighthouse");
    expect(refused).toMatchObject({ code: 400, data: null });

    const outOfScope = await searchClient().POST("/v1/rag/search", {
      body: { knowledgeIds: ["kb_elsewhere"], text: "anything" },
    });
    // openapi-fetch's Readable<> drops a property typed only `null` (the envelope's `data` on
    // errors), so the typed error has code and message; the body itself carries data: null.
    expectTypeOf(outOfScope.error).toEqualTypeOf<Omit<SearchTypes["schemas"]["SearchError"], "data"> | undefined>();
    expect(outOfScope.response.status).toBe(400);
    expect(outOfScope.error).toMatchObject({ code: 400, data: null });
    const noKey = await searchClient("cap_srch_unknown").POST("/v1/rag/search", {
      body: { knowledgeIds: ["kb_pages"], text: "anything" },
    });
    expect(noKey.response.status).toBe(401);
    expect(noKey.error?.code).toBe(401);
  });
});
