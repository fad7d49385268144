// Standalone ingestion is the operator's (item 6 of #26): scripts/standalone/ingest.ts against a
// real search service and a real scraper (the test ground's Chromium) crawling a loopback site.
// Its documents carry the operator's ids (a URL source by its name, a crawl's pages by URL) and
// metadata (`source`), each stamped with its source; a second run embeds only what changed, and
// deletes the document of a page gone from the site and those of a source gone from the spec.
import { docsIdFor, sourceIdOf } from "@capstan/operator/translate";
import type { KnowledgeBase } from "@capstan/shared/api";
import { type IngestedDocument, SearchClient } from "@capstan/shared/clients/search-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ingestKnowledgeBase } from "../../scripts/standalone/ingest.ts";
import { type Scraper, type Site, startScraper, startSite } from "../scraper/helpers.ts";
import { INTERNAL_TOKEN, knowledgeBase, type Running, startSearch } from "../search/helpers.ts";

let site: Site;
let scraper: Scraper;
let search: Running;
let client: SearchClient;
const REF = { namespace: "default", knowledgeId: "kb_handbook" };
const linked = new Set(["/docs/a", "/docs/b", "/docs/c"]);
const text = (path: string) => `The page ${path} tells how the harbour crane lifts containers.`;

async function held(): Promise<IngestedDocument[]> {
  return (await client.ingestedDocuments(REF, { limit: 1000 })).documents;
}

beforeAll(async () => {
  site = await startSite();
  const page = (title: string, body: string, links: string[]) =>
    `<html><head><title>${title}</title></head><body><main><h1>${title}</h1><p>${body}</p>` +
    `${links.map((l) => `<a href="${l}">${l}</a>`).join(" ")}</main></body></html>`;
  site.route("/docs/", (_req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(page("Docs", "The docs index.", [...linked]));
  });
  for (const path of ["/docs/a", "/docs/b", "/docs/c", "/single"]) {
    site.route(path, (_req, res) => {
      const gone = path !== "/single" && !linked.has(path);
      res.writeHead(gone ? 404 : 200, { "content-type": "text/html" });
      res.end(page(path, gone ? "Gone" : text(path), []));
    });
  }
  scraper = await startScraper({ allowedHosts: [`127.0.0.1:${site.port}`] });
  search = await startSearch({ kbs: [knowledgeBase("handbook")] });
  client = new SearchClient({ baseURL: search.internalUrl, token: INTERNAL_TOKEN, namespace: "default" });
}, 120_000);

afterAll(async () => {
  await search?.close();
  await scraper?.close();
  await site?.close();
});

describe("standalone ingestion", () => {
  it("writes the operator's documents, and prunes gone pages and sources like the operator", async () => {
    const sources = [
      { name: "Single", url: `${site.origin}/single` },
      { name: "Docs", crawl: { url: `${site.origin}/docs/`, limit: 10 } },
      { name: "Note", text: "The crane operators work in two shifts." },
    ];
    const kb = knowledgeBase("handbook", { sources } as Partial<KnowledgeBase["spec"]>);
    const scraping = { url: scraper.url, timeout: 20, max_retries: 0 };
    const first = await ingestKnowledgeBase(kb, { search: client, scraping });
    expect(first).toMatchObject({ documents: 6, embedded: 6, pruned: 0, failures: [] });

    const crawlId = (path: string) => docsIdFor("Docs", "crawl", `${site.origin}${path}`);
    const expected = [
      docsIdFor("Single", "url"),
      docsIdFor("Note", "text"),
      ...["/docs/", "/docs/a", "/docs/b", "/docs/c"].map(crawlId),
    ];
    const docs = await held();
    expect(docs.map((d) => d.docsId).sort()).toEqual([...expected].sort());
    // Each stamped with its source as the operator's refresh stamps it.
    const bySource = Object.groupBy(docs, (d) => d.source ?? "none");
    for (const s of sources) expect(bySource[sourceIdOf(s)]?.length, s.name).toBe(s.crawl ? 4 : 1);
    // The page's URL under `source`, the metadata name of the operator's documents.
    const hits = await client.search({ knowledgeIds: [REF.knowledgeId], text: text("/docs/b"), maxResults: 1 });
    expect(hits[0]?.metadata).toMatchObject({ source: `${site.origin}/docs/b` });

    // A page leaves the site and a source leaves the spec: both documents go; only the index,
    // whose links changed, is embedded again.
    linked.delete("/docs/c");
    const fewer = knowledgeBase("handbook", { sources: sources.slice(0, 2) } as Partial<KnowledgeBase["spec"]>);
    const second = await ingestKnowledgeBase(fewer, { search: client, scraping });
    expect(second).toMatchObject({ documents: 4, embedded: 1, pruned: 2, failures: [] });
    const after = (await held()).map((d) => d.docsId).sort();
    expect(after).toEqual(
      expected.filter((id) => id !== crawlId("/docs/c") && id !== docsIdFor("Note", "text")).sort(),
    );
  });
});
