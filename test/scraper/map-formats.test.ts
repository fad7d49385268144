// POST /map (sitemaps and the start page's links, same site by default, search, limit) and
// `formats` on /scrape and /scrape/bulk (markdown, cleaned html, rawHtml, links, screenshot as a
// PNG data URL), with the real Chromium and loopback sites; without formats the answer is the
// reference's, field for field.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCrawlSite, type CrawlSite } from "./crawl-site.ts";
import { type Json, post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

let site: Site;
let offsite: Site;
let generated: CrawlSite;
let scraper: Scraper;

beforeAll(async () => {
  [site, offsite] = await Promise.all([startSite(), startSite()]);
  generated = buildCrawlSite(site, offsite.origin, "http://169.254.169.254");
  scraper = await startScraper({ allowedHosts: [`127.0.0.1:${site.port}`, `127.0.0.1:${offsite.port}`] });
});

afterAll(async () => {
  await scraper?.close();
  await Promise.all([site?.close(), offsite?.close()]);
});

describe("POST /map", () => {
  it("lists the site's URLs from its sitemaps and the start page's links, same site only", async () => {
    const res = await post(scraper.url, "/map", { url: `${site.origin}/ext/` });
    expect(res.status).toBe(200);
    const links = res.body.links as string[];
    expect(new Set(links).size).toBe(links.length);
    expect(links.sort()).toEqual(generated.paths.map((p) => `${site.origin}${p}`).sort());
    expect(links.some((l) => l.startsWith(offsite.origin))).toBe(false);
    expect(offsite.hits).toEqual([]);
  });

  it("filters by search, stops at limit, and reads only the sitemap with sitemapOnly", async () => {
    const blog = await post(scraper.url, "/map", { url: `${site.origin}/`, search: "POST1", limit: 5 });
    expect(blog.body.links).toHaveLength(5);
    for (const l of blog.body.links as string[]) expect(l).toMatch(/\/blog\/post1\d?$/);
    const before = site.hits.filter((h) => h === "/hidden/").length;
    const onlySitemap = await post(scraper.url, "/map", { url: `${site.origin}/hidden/`, sitemapOnly: true });
    expect(onlySitemap.body.links).toContain(`${site.origin}/hidden/orphan0`);
    // The start page was not rendered.
    expect(site.hits.filter((h) => h === "/hidden/").length).toBe(before);
    const noSitemap = await post(scraper.url, "/map", { url: `${site.origin}/ext/`, ignoreSitemap: true });
    expect((noSitemap.body.links as string[]).sort()).toEqual([
      `${site.origin}/`,
      `${site.origin}/ext/`,
      `${site.origin}/ext/a`,
    ]);
  });

  it("refuses a target the guard refuses, and a bad body", async () => {
    const refused = await post(scraper.url, "/map", { url: "http://169.254.169.254/" });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ success: false, code: "BLOCKED_TARGET" });
    expect((await post(scraper.url, "/map", { url: `${site.origin}/`, limit: 0 })).status).toBe(400);
  });
});

describe("formats", () => {
  it("without formats, /scrape answers exactly the reference's fields", async () => {
    const res = await post(scraper.url, "/scrape", { url: `${site.origin}/docs/a1/p1` });
    const data = res.body.data as Json;
    expect(Object.keys(data).sort()).toEqual(["html", "markdown", "metadata", "screenshot"]);
    expect(data.html).toContain("<script>");
    expect(data.screenshot).toBeNull();
  });

  it("answers each format asked for, and only those", async () => {
    const res = await post(scraper.url, "/scrape", {
      url: `${site.origin}/docs/a1/p1`,
      formats: ["markdown", "html", "rawHtml", "links", "screenshot"],
    });
    expect(res.status).toBe(200);
    const data = res.body.data as Json;
    expect(Object.keys(data).sort()).toEqual(["html", "links", "markdown", "metadata", "rawHtml", "screenshot"]);
    expect(data.markdown).toContain("# Page 1.1");
    // html: cleaned (no script, no page chrome with onlyMainContent); rawHtml: the rendered page.
    expect(data.html).toContain("<h1>Page 1.1</h1>");
    expect(data.html).not.toContain("<script>");
    expect(data.html).not.toContain("Footer of");
    expect(data.rawHtml).toContain("<script>window.x = 1;</script>");
    expect(data.rawHtml).toContain("Footer of Page 1.1");
    expect(data.links).toEqual([
      `${site.origin}/`,
      `${site.origin}/docs/a1/`,
      `${site.origin}/docs/a1/p2`,
      `${site.origin}/docs/a1/p1/notes`,
    ]);
    expect(data.screenshot).toMatch(/^data:image\/png;base64,/);
    const png = Buffer.from(data.screenshot.slice("data:image/png;base64,".length), "base64");
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));

    const linksOnly = await post(scraper.url, "/scrape", { url: `${site.origin}/ext/`, formats: ["links"] });
    expect(Object.keys(linksOnly.body.data as Json).sort()).toEqual(["links", "metadata"]);
    expect((linksOnly.body.data as Json).links).toEqual([
      `${site.origin}/`,
      `${site.origin}/ext/a`,
      `${offsite.origin}/`,
      "http://169.254.169.254/",
    ]);
  });

  it("applies to each URL of /scrape/bulk, and an unknown format is a 400", async () => {
    const bulk = await post(scraper.url, "/scrape/bulk", {
      urls: [`${site.origin}/blog/post1`, `${site.origin}/blog/post2`],
      formats: ["rawHtml"],
    });
    for (const entry of bulk.body.data as Json[]) {
      expect(Object.keys(entry.data).sort()).toEqual(["metadata", "rawHtml"]);
    }
    const bad = await post(scraper.url, "/scrape", { url: `${site.origin}/`, formats: ["pdf"] });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, code: "BAD_REQUEST" });
    expect(bad.body.error).toContain("formats.0");
  });
});
