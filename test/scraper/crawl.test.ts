// POST /crawl on a generated loopback site (crawl-site.ts, 868 pages) with the real Chromium:
// exactly which pages come back under path depth, discovery depth, include and exclude patterns
// and a limit; robots.txt; sitemap discovery (a sitemap index, gzipped and plain sitemaps); links
// to another site or to a refused target never fetched unless allowed, and then only through
// the guard. Every assertion on "never fetched" reads the loopback servers' request counters.

import { apiMetrics, SiteFiles, SsrfGuard } from "@capstan/scraper";
import { createRegistry } from "@capstan/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCrawlSite, type CrawlSite, finishedJob, hitsUnder, resultPaths } from "./crawl-site.ts";
import {
  JOB_BACKENDS,
  type JobsConfig,
  metricValue,
  post,
  type Scraper,
  type Site,
  startScraper,
  startSite,
} from "./helpers.ts";

let site: Site;
let offsite: Site;
let blocked: Site;
let generated: CrawlSite;
let scraper: Scraper;

beforeAll(async () => {
  [site, offsite, blocked] = await Promise.all([startSite(), startSite(), startSite()]);
  offsite.route("/", "<html><head><title>Offsite</title></head><body><h1>Offsite</h1></body></html>");
  blocked.route("/", "<html><head><title>Blocked</title></head><body><h1>Blocked</h1></body></html>");
  generated = buildCrawlSite(site, offsite.origin, blocked.origin);
});

afterAll(async () => {
  await Promise.all([site?.close(), offsite?.close(), blocked?.close()]);
});

async function crawl(body: Record<string, unknown>) {
  const started = await post(scraper.url, "/crawl", body);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  expect(started.body).toMatchObject({ success: true, id: expect.any(String) });
  expect(started.body.url).toBe(`${scraper.url}/crawl/${started.body.id}`);
  const done = await finishedJob(started.body.url as string);
  expect(done.status.status).toBe("completed");
  return { id: started.body.id as string, ...done };
}

// The same crawls with jobs in the scraper's memory and shared through Redis (BullMQ).
describe.each(JOB_BACKENDS)("POST /crawl, jobs %s", (_name, jobsConfig: () => JobsConfig) => {
  beforeAll(async () => {
    for (const s of [site, offsite, blocked]) s.hits.length = 0;
    // `blocked` is not in the allow-list: the guard refuses it as loopback.
    scraper = await startScraper({
      allowedHosts: [`127.0.0.1:${site.port}`, `127.0.0.1:${offsite.port}`],
      workerConcurrency: 3,
      ...jobsConfig(),
    });
  });
  afterAll(async () => {
    await scraper?.close();
  });

  it("keeps to maxDepth and the include/exclude patterns, on links and sitemap entries alike", async () => {
    expect(generated.paths.length).toBeGreaterThanOrEqual(500);
    const { status, data } = await crawl({
      url: `${site.origin}/docs/`,
      includePaths: ["^/docs/a[12]/"],
      excludePaths: ["/p[1-9][0-9]$"],
      maxDepth: 2,
    });
    const expected = ["/docs/a1/", "/docs/a2/"];
    for (const i of [1, 2]) for (let j = 0; j < 10; j++) expected.push(`/docs/a${i}/p${j}`);
    expect(resultPaths(data)).toEqual(expected.sort());
    expect(status).toMatchObject({ total: 23, completed: 23, failed: 0, creditsUsed: 23 });
    // Default formats: markdown and metadata only.
    expect(Object.keys(data[0]).sort()).toEqual(["markdown", "metadata"]);
    expect(data.find((d: { metadata: { title: string } }) => d.metadata.title === "Page 1.3").markdown).toContain(
      "# Page 1.3",
    );
    // /docs/ itself was fetched for its links but is not a wanted path; notes are past maxDepth.
    expect(hitsUnder(site, "/docs/a1/p3/notes")).toEqual([]);
    expect(hitsUnder(site, "/docs/a1/p10")).toEqual([]);
    expect(hitsUnder(site, "/docs/a3/")).toEqual([]);
  });

  it("follows links up to maxDiscoveryDepth", async () => {
    const base = { url: `${site.origin}/docs/a3/`, includePaths: ["^/docs/a3/p[0-4](/notes)?$"], ignoreSitemap: true };
    const one = await crawl({ ...base, maxDiscoveryDepth: 1 });
    expect(resultPaths(one.data)).toEqual(["/docs/a3/p0", "/docs/a3/p1", "/docs/a3/p2", "/docs/a3/p3", "/docs/a3/p4"]);
    expect(hitsUnder(site, "/docs/a3/p0/notes")).toEqual([]);
    const two = await crawl({ ...base, maxDiscoveryDepth: 2 });
    expect(resultPaths(two.data)).toEqual(
      [0, 1, 2, 3, 4].flatMap((j) => [`/docs/a3/p${j}`, `/docs/a3/p${j}/notes`]).sort(),
    );
  });

  it("stops at the limit", async () => {
    const { status, data } = await crawl({ url: `${site.origin}/blog/`, limit: 7 });
    expect(data).toHaveLength(7);
    expect(new Set(resultPaths(data)).size).toBe(7);
    for (const p of resultPaths(data)) expect(p).toMatch(/^\/blog\//);
    expect(status).toMatchObject({ total: 7, completed: 7 });
  });

  it("honours robots.txt: disallowed pages are listed, never fetched", async () => {
    const { id, data } = await crawl({ url: `${site.origin}/`, includePaths: ["^/private/"], maxDiscoveryDepth: 1 });
    expect(data).toEqual([]);
    const errors = await fetch(`${scraper.url}/crawl/${id}/errors`).then((r) => r.json());
    expect(errors.robotsBlocked).toContain(`${site.origin}/private/`);
    expect(errors.robotsBlocked).toContain(`${site.origin}/private/x3`);
    expect(hitsUnder(site, "/private/")).toEqual([]);
    expect(hitsUnder(site, "/robots.txt").length).toBeGreaterThan(0);
    const pages = (outcome: string) =>
      metricValue(scraper.registry, "capstan_scraper_job_pages_total", { kind: "crawl", outcome });
    expect(await pages("robots_blocked")).toBeGreaterThanOrEqual(11);
    expect(
      await metricValue(scraper.registry, "capstan_scraper_outbound_requests_total", { target: "site" }),
    ).toBeGreaterThan(0);
  });

  it("finds pages only the sitemap lists, and not with ignoreSitemap", async () => {
    const body = { url: `${site.origin}/`, includePaths: ["^/hidden/"], maxDiscoveryDepth: 0 };
    const withSitemap = await crawl(body);
    expect(resultPaths(withSitemap.data)).toEqual(["/hidden/orphan0", "/hidden/orphan1"]);
    expect(hitsUnder(site, "/sitemap-1.xml.gz").length).toBeGreaterThan(0);
    const without = await crawl({ ...body, ignoreSitemap: true });
    expect(without.data).toEqual([]);
  });

  it("never fetches another site unless allowed, and never a target the guard refuses", async () => {
    const sameSite = await crawl({ url: `${site.origin}/ext/` });
    expect(resultPaths(sameSite.data)).toEqual(["/ext/", "/ext/a"]);
    expect(offsite.hits).toEqual([]);
    expect(blocked.hits).toEqual([]);

    const external = await crawl({ url: `${site.origin}/ext/`, allowExternalLinks: true, ignoreSitemap: true });
    expect(external.data.map((d: { metadata: { sourceURL: string } }) => d.metadata.sourceURL).sort()).toEqual(
      [`${offsite.origin}/`, `${site.origin}/ext/`, `${site.origin}/ext/a`].sort(),
    );
    expect(offsite.hits).toContain("/");
    expect(blocked.hits).toEqual([]);
    const errors = await fetch(`${scraper.url}/crawl/${external.id}/errors`).then((r) => r.json());
    expect(errors.errors).toEqual([expect.objectContaining({ url: `${blocked.origin}/`, code: "BLOCKED_TARGET" })]);
  });

  it("reads robots.txt and sitemaps through the guard, redirects included", async () => {
    site.route("/to-blocked", (_req, res) => {
      res.writeHead(302, { location: `${blocked.origin}/robots.txt` });
      res.end();
    });
    site.route("/to-ftp", (_req, res) => {
      res.writeHead(301, { location: "ftp://127.0.0.1/robots.txt" });
      res.end();
    });
    site.route("/to-robots", (_req, res) => {
      res.writeHead(307, { location: "/robots.txt" });
      res.end();
    });
    const guard = new SsrfGuard({ allowedHosts: [`127.0.0.1:${site.port}`] });
    const dispatcher = guard.dispatcher();
    const files = new SiteFiles({ guard, dispatcher, metrics: apiMetrics(createRegistry()), maxBytes: 1 << 20 });
    const signal = new AbortController().signal;
    try {
      const followed = await files.get(`${site.origin}/to-robots`, 1 << 20, signal);
      expect(followed.body.toString()).toContain("Disallow: /private/");
      for (const path of ["/to-blocked", "/to-ftp"]) {
        await expect(files.get(`${site.origin}${path}`, 1 << 20, signal)).rejects.toMatchObject({
          code: "BLOCKED_TARGET",
        });
      }
      await expect(files.robots(blocked.origin, signal)).rejects.toMatchObject({ code: "BLOCKED_TARGET" });
      expect(blocked.hits).toEqual([]);
    } finally {
      await dispatcher.close();
    }
  });

  it("refuses a bad body, a bad pattern and a refused start URL at once", async () => {
    expect((await post(scraper.url, "/crawl", {})).status).toBe(400);
    const pattern = await post(scraper.url, "/crawl", { url: `${site.origin}/`, includePaths: ["(a"] });
    expect(pattern.status).toBe(400);
    expect(pattern.body).toMatchObject({ success: false, code: "BAD_REQUEST" });
    expect(pattern.body.error).toContain("includePaths.0");
    const refused = await post(scraper.url, "/crawl", { url: `${blocked.origin}/` });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ success: false, code: "BLOCKED_TARGET" });
    expect(blocked.hits).toEqual([]);
  });
});
