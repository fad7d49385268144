// A crawl in which some pages could not be fetched is not a complete crawl: real API server,
// operator, search and scraper (the test ground's Chromium) crawling a small loopback site. When
// one page's server drops the connection (a page that fails to load, as under a render timeout or
// a site briefly down), the scraper counts it as failed and leaves it out of the crawl's results.
// The refresh then writes the pages it has (a changed page's new text is searchable), keeps the
// failed page's document (it is not known to be gone, unlike a page answering 404), and says so:
// Ingested False (CrawlIncomplete) and Degraded naming the source, so it is retried. Once the page
// loads again, a refresh ends Ingested with every page.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { type Site, startSite } from "../scraper/helpers.ts";
import { CAP, condition, create, eventually, get, type Obj, patch } from "./helpers.ts";
import { type ScrapingStack, startScrapingStack } from "./served-search.ts";

const ns = `crawl-incomplete-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = "crawl-incomplete-test-token-0123456789";
const KB = { apiVersion: CAP, kind: "KnowledgeBase", ns, name: "atlas" };

// Each page's distinctive sentence (its version in it), linked from the index.
const version: Record<string, number> = { "/docs/rivers": 1, "/docs/mountains": 1, "/docs/deserts": 1 };
const textOf = (path: string) =>
  path === "/docs/"
    ? "The atlas index lists rivers, mountains and deserts."
    : `The ${path} page, edition ${version[path]}.`;
let dropping = new Set<string>();

let client: TestKube;
let site: Site;
let stack: ScrapingStack;

/** Every chunk text the knowledge base answers a broad query with. */
async function texts(): Promise<string> {
  const res = await fetch(`${stack.search.internalUrl}/v1/rag/search`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}`, "x-capstan-namespace": ns },
    body: JSON.stringify({ knowledgeIds: ["kb_atlas"], text: "atlas page edition", minSimilarity: 0, maxResults: 20 }),
  });
  const body = (await res.json()) as { data: { text: string }[] | null };
  return (body.data ?? []).map((h) => h.text).join("\n");
}

/** The KnowledgeBase once its status answers the current generation with the Ingested condition wanted. */
function refreshed(ingested: string): Promise<Obj> {
  return eventually(`the refresh (Ingested=${ingested})`, async () => {
    const kb = (await get(client, CAP, "KnowledgeBase", ns, "atlas")) as Obj;
    const done = kb.status?.observedGeneration === kb.metadata.generation && !kb.status?.refresh;
    return done && condition(kb, "Ingested")?.status === ingested ? kb : undefined;
  });
}

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, ns);
  site = await startSite();
  for (const path of ["/docs/", ...Object.keys(version)]) {
    site.route(path, (req, res) => {
      if (dropping.has(path)) {
        req.socket.destroy(); // no answer at all: the page fails to load
        return;
      }
      const links = Object.keys(version).map((p) => `<a href="${p}">${p}</a>`);
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(
        `<html><head><title>${path}</title></head><body><nav>${links.join(" ")}</nav>` +
          `<main><h1>${path}</h1><p>${textOf(path)}</p></main></body></html>`,
      );
    });
  }
  stack = await startScrapingStack(client, ns, TOKEN, site, inject("kubeconfig"));
}, 300_000);

afterAll(async () => {
  await stack?.close();
  await site?.close();
});

describe("a crawl with a page that failed to load", () => {
  it("keeps that page's document, writes the others, and is not reported Ingested until every page is in", async () => {
    await create(client, {
      apiVersion: CAP,
      kind: "KnowledgeBase",
      metadata: { name: "atlas", namespace: ns },
      spec: { sources: [{ name: "Atlas", crawl: { url: `${site.origin}/docs/`, limit: 20 } }] },
    });
    const first = await refreshed("True");
    expect(first.status).toMatchObject({ documents: 4, failures: 0 });

    // The rivers page changes; the mountains page fails to load during the next crawl.
    version["/docs/rivers"] = 2;
    dropping = new Set(["/docs/mountains"]);
    await patch(client, KB, { spec: { description: "v2" } });
    const second = await refreshed("False");
    expect(condition(second, "Ingested")).toMatchObject({ reason: "CrawlIncomplete" });
    expect(condition(second, "Ingested")?.message).toMatch(/1 of 4 pages .*could not be fetched/);
    expect(condition(second, "Degraded")).toMatchObject({ status: "True", reason: "SourcesFailed" });
    expect(second.status).toMatchObject({ documents: 4, failures: 1, failedSources: ["Atlas"] });
    const during = await texts();
    expect(during).toContain(textOf("/docs/rivers")); // the new edition is searchable
    expect(during).toContain("The /docs/mountains page, edition 1."); // the failed page's document is kept

    // The page loads again: the next refresh ends with every page, Ingested.
    dropping = new Set();
    version["/docs/mountains"] = 2;
    await patch(client, KB, { spec: { description: "v3" } });
    const third = await refreshed("True");
    expect(third.status).toMatchObject({ documents: 4, failures: 0 });
    expect(await texts()).toContain(textOf("/docs/mountains"));
  });
});
