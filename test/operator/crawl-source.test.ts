// A KnowledgeBase crawl source, end to end: real API server, operator, search and scraper (the
// test ground's Chromium) crawling a small loopback site with a depth and a path limit. The
// crawl's pages become exactly the expected documents, each searchable; a refresh after a page is
// removed from the site deletes its document; a refresh with the scraper stopped keeps every
// document and names the failed source in status, and the scraper it could not reach; a crawl given up on is cancelled on the scraper.
// The pages are written as the crawl brings them (issue #26): the crawl reads no further results
// while the pages it handed over are not taken (backpressure), and the pages already fetched are
// in search while the crawl still waits for another.
import type { ServerResponse } from "node:http";
import { ScraperClient } from "@capstan/shared/clients/scraper-client";
import { type CrawlApi, CrawlError, crawlPages } from "@capstan/shared/clients/scraper-crawl";
import { SearchClient } from "@capstan/shared/clients/search-client";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { type Site, startSite } from "../scraper/helpers.ts";
import { CAP, condition, create, eventually, get, type Obj, patch } from "./helpers.ts";
import { type ScrapingStack, startScrapingStack } from "./served-search.ts";

const ns = `crawl-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = "crawl-source-test-token-0123456789";
const KB = { apiVersion: CAP, kind: "KnowledgeBase", ns, name: "handbook" };

// Each page's distinctive sentence; the site's pages link to each other.
const TEXT: Record<string, string> = {
  "/docs/": "The handbook index says the observatory opens at nine every morning.",
  "/docs/telescopes": "The telescopes page says the largest mirror is four metres across.",
  "/docs/comets": "The comets page says Halley returns every seventy-six years.",
  "/docs/private": "The private page holds the door code, never to be indexed.",
  "/docs/deep/archive/old": "The archive page lies three levels down, below the depth limit.",
  "/about": "The about page sits outside the start path.",
};
const linked = new Set(Object.keys(TEXT));

let client: TestKube;
let site: Site;
let stack: ScrapingStack;

function page(path: string): string {
  const links = [...linked].filter((p) => p !== path).map((p) => `<li><a href="${p}">${p}</a></li>`);
  return `<html><head><title>${path}</title></head><body><nav><ul>${links.join("")}</ul></nav><main><h1>${path}</h1><p>${TEXT[path]}</p></main></body></html>`;
}

/** Every chunk text the knowledge base answers a broad query with. */
async function texts(): Promise<string> {
  // The internal token searches on search's internal port only.
  const res = await fetch(`${stack.search.internalUrl}/v1/rag/search`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}`, "x-capstan-namespace": ns },
    body: JSON.stringify({
      knowledgeIds: ["kb_handbook"],
      text: "observatory telescopes comets",
      minSimilarity: 0,
      maxResults: 20,
    }),
  });
  const body = (await res.json()) as { data: { text: string }[] | null };
  return (body.data ?? []).map((h) => h.text).join("\n");
}

/** The KnowledgeBase once its status answers the current generation with the Ingested condition wanted. */
function refreshed(ingested: string): Promise<Obj> {
  return eventually(`the refresh (Ingested=${ingested})`, async () => {
    const kb = (await get(client, CAP, "KnowledgeBase", ns, "handbook")) as Obj;
    return kb.status?.observedGeneration === kb.metadata.generation && condition(kb, "Ingested")?.status === ingested
      ? kb
      : undefined;
  });
}

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, ns);
  site = await startSite();
  for (const path of Object.keys(TEXT)) {
    site.route(path, (_req, res) => {
      if (!linked.has(path)) {
        res.writeHead(404, { "content-type": "text/html" });
        res.end("<html><body><h1>Gone</h1></body></html>");
        return;
      }
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(page(path));
    });
  }
  stack = await startScrapingStack(client, ns, TOKEN, site, inject("kubeconfig"));
}, 300_000);

afterAll(async () => {
  await stack?.close();
  await site?.close();
});

describe("a crawl the operator gives up on", () => {
  it("is cancelled on the scraper", async () => {
    // The start page never answers: the crawl cannot finish within the operator's bound.
    site.route("/slow/", () => undefined);
    const client = new ScraperClient({ url: stack.scraper?.url, timeout: 10, max_retries: 1 });
    const ids: string[] = [];
    const api: CrawlApi = {
      startCrawl: async (r) => {
        const started = await client.startCrawl(r);
        ids.push(started.id);
        return started;
      },
      crawlStatus: (id, skip) => client.crawlStatus(id, skip),
      cancelCrawl: (id) => client.cancelCrawl(id),
    };
    const gaveUp = crawlPages(api, { url: `${site.origin}/slow/` }, { maxWaitMs: 300 });
    await expect(gaveUp).rejects.toBeInstanceOf(CrawlError);
    await expect(gaveUp).rejects.toThrow(/did not finish/);
    expect(ids).toHaveLength(1);
    expect((await client.crawlStatus(ids[0] as string)).status).toBe("cancelled");
    await client.close();
  });
});

describe("a crawl whose pages are handed over as they come", () => {
  it("reads no further results until the caller has taken the pages it was handed", async () => {
    const client = new ScraperClient({ url: stack.scraper?.url, timeout: 10, max_retries: 1 });
    let polls = 0;
    const api: CrawlApi = {
      startCrawl: (r) => client.startCrawl(r),
      crawlStatus: (id, skip) => {
        polls++;
        return client.crawlStatus(id, skip);
      },
      cancelCrawl: (id) => client.cancelCrawl(id),
    };
    let release = () => {};
    const full = new Promise<void>((r) => {
      release = r;
    });
    const batches: string[][] = [];
    const request = { url: `${site.origin}/docs/`, limit: 20, maxDepth: 1, excludePaths: ["^/docs/private"] };
    const crawl = crawlPages(api, request, {
      // The first batch is held (as a full write buffer holds it) until released.
      take: async (pages) => {
        batches.push(pages.map((p) => p.url));
        if (batches.length === 1) await full;
      },
    });
    await eventually("the first pages handed over", () => batches.length > 0);
    const pollsThen = polls;
    await new Promise((r) => setTimeout(r, 2_000)); // longer than the crawl's waits between polls
    expect(polls).toBe(pollsThen);
    expect(batches).toHaveLength(1);
    release();
    const result = await crawl;
    expect(result).toMatchObject({ pages: [], found: 3, failed: 0 });
    const urls = ["/docs/", "/docs/telescopes", "/docs/comets"].map((p) => `${site.origin}${p}`).sort();
    expect(batches.flat().sort()).toEqual(urls);
    await client.close();
  });
});

describe("a KnowledgeBase crawl source", () => {
  it("has the pages already fetched in search while its crawl still waits for a page", async () => {
    // /live/held answers only once released: until then the crawl cannot end.
    const waiting: (() => void)[] = [];
    let abandoned = false;
    const live = ["/live/", "/live/a", "/live/b", "/live/held"];
    const answer = (path: string, res: ServerResponse) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      const links = live.map((p) => `<a href="${p}">${p}</a>`).join(" ");
      res.end(
        `<html><head><title>${path}</title></head><body><main><p>The ${path} page.</p>${links}</main></body></html>`,
      );
    };
    for (const path of live.slice(0, 3)) site.route(path, (_req, res) => answer(path, res));
    site.route("/live/held", (req, res) => {
      req.on("close", () => {
        if (!res.writableEnded) abandoned = true;
      });
      waiting.push(() => answer("/live/held", res));
    });
    await create(client, {
      apiVersion: CAP,
      kind: "KnowledgeBase",
      metadata: { name: "live", namespace: ns },
      spec: { sources: [{ name: "Live", crawl: { url: `${site.origin}/live/`, limit: 20 } }] },
    });
    const docs = new SearchClient({
      baseURL: stack.search.internalUrl,
      token: TOKEN,
      namespace: ns,
      timeoutMs: 30_000,
    });
    const ref = { namespace: ns, knowledgeId: "kb_live" };
    const early = await eventually(
      "the three pages fetched in search",
      async () => {
        const held = (await docs.ingestedDocuments(ref, { limit: 100 })).documents;
        return held.length >= 3 ? held : undefined;
      },
      20_000, // within the scraper's request timeout (30 s): the held page is still unanswered
    );
    expect(waiting.length).toBeGreaterThan(0);
    expect(abandoned).toBe(false);
    expect(early.map((d) => d.origin).sort()).toEqual(live.slice(0, 3).map((p) => `${site.origin}${p}`));
    const during = (await get(client, CAP, "KnowledgeBase", ns, "live")) as Obj;
    expect(during.status?.refresh).toBeDefined(); // the refresh still runs
    await eventually("progress counting the pages written", async () => {
      const kb = (await get(client, CAP, "KnowledgeBase", ns, "live")) as Obj;
      return kb.status?.progress === "0/1 sources, 3 pages crawled, 3 written";
    });
    for (const w of waiting) w();
    const done = await eventually("the refresh ended", async () => {
      const kb = (await get(client, CAP, "KnowledgeBase", ns, "live")) as Obj;
      const ended = kb.status?.observedGeneration === kb.metadata.generation && !kb.status?.refresh;
      return ended && condition(kb, "Ingested")?.status === "True" ? kb : undefined;
    });
    expect(done.status).toMatchObject({ documents: 4, failures: 0, progress: "1/1 sources, 4 pages crawled" });
    expect((await docs.ingestedDocuments(ref, { limit: 100 })).documents).toHaveLength(4);
  });
});

describe("a KnowledgeBase with a crawl source", () => {
  it("ingests the crawl's pages within its limits, drops a removed page, and keeps all when the scraper is down", async () => {
    await create(client, {
      apiVersion: CAP,
      kind: "KnowledgeBase",
      metadata: { name: "handbook", namespace: ns },
      spec: {
        sources: [
          {
            name: "Handbook",
            crawl: { url: `${site.origin}/docs/`, limit: 20, maxDepth: 1, excludePaths: ["^/docs/private"] },
          },
        ],
      },
    });
    const first = await refreshed("True");
    // The index and its two pages: not the excluded one, the one below maxDepth, nor /about.
    expect(first.status).toMatchObject({ documents: 3, failures: 0, progress: "1/1 sources, 3 pages crawled" });
    expect(condition(first, "Ready")?.status).toBe("True");
    const all = await eventually("the three pages searchable", async () => {
      const t = await texts();
      return ["/docs/", "/docs/telescopes", "/docs/comets"].every((p) => t.includes(TEXT[p] as string)) ? t : false;
    });
    for (const p of ["/docs/private", "/docs/deep/archive/old", "/about"]) expect(all).not.toContain(TEXT[p]);
    expect(site.hits.some((h) => h.startsWith("/docs/private"))).toBe(false);

    // The comets page leaves the site (unlinked, 404): a refresh deletes its document.
    linked.delete("/docs/comets");
    await patch(client, KB, { spec: { description: "v2" } });
    const second = await refreshed("True");
    expect(second.status).toMatchObject({ documents: 2, failures: 0 });
    const after = await texts();
    expect(after).toContain(TEXT["/docs/telescopes"]);
    expect(after).toContain(TEXT["/docs/"]);
    expect(after).not.toContain(TEXT["/docs/comets"]);

    // The scraper stops: the crawl fails, every document stays, the source is named.
    const scraperUrl = stack.scraper?.url as string;
    await stack.stopScraper();
    await patch(client, KB, { spec: { description: "v3" } });
    const third = await refreshed("False");
    expect(third.status).toMatchObject({ documents: 2, failures: 1, failedSources: ["Handbook"] });
    expect(condition(third, "Degraded")).toMatchObject({ status: "True", reason: "SourcesFailed" });
    expect(condition(third, "Ingested")).toMatchObject({ reason: "CrawlFailed" });
    // The message names the scraper the source goes through (here the url configured in place of the platform Scraper).
    expect(condition(third, "Ingested")?.message).toContain(
      `crawling ${site.origin}/docs/ through the platform scraping url ${scraperUrl} failed`,
    );
    const kept = await texts();
    expect(kept).toContain(TEXT["/docs/telescopes"]);
    expect(kept).toContain(TEXT["/docs/"]);
  });
});
