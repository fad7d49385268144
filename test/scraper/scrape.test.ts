// /scrape against real Chromium: script-rendered content and waitFor, metadata from the head,
// GFM tables, main content, clean links, extractors, screenshots.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Json, post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

let site: Site;
let scraper: Scraper;

const ARTICLE = `<!doctype html>
<html lang="en-GB">
<head>
  <title>  Capstan Field Notes </title>
  <meta name="description" content="Notes from the field about rigging.">
  <meta name="keywords" content="rigging, sailing">
  <meta property="og:title" content="Field Notes (OG)">
  <meta property="og:description" content="OG description">
  <meta property="og:image" content="/img/cover.png">
  <meta property="og:type" content="article">
  <meta property="og:site_name" content="Capstan">
  <link rel="canonical" href="/articles/field-notes">
</head>
<body>
  <nav><a href="/">Home</a> <a href="/about">About us</a></nav>
  <header><p>Site banner text</p></header>
  <main>
    <h1>Rigging basics</h1>
    <p>A <a href="/docs/knots?x=1">guide to knots</a> and <a href="javascript:alert(1)">a script link</a>.</p>
    <p class="price" data-sku="SKU-42">42.50 EUR</p>
    <ul class="tags"><li>rope</li><li>sail</li><li>mast</li></ul>
    <table>
      <thead><tr><th>Knot</th><th>Use</th></tr></thead>
      <tbody><tr><td>Bowline</td><td>Loop</td></tr><tr><td>Cleat hitch</td><td>Mooring</td></tr></tbody>
    </table>
    <div id="late"></div>
  </main>
  <footer><p>Footer legal text</p></footer>
  <script>
    document.querySelector("main").insertAdjacentHTML("beforeend", "<p id='sync'>Rendered by script at once</p>");
    setTimeout(() => { document.getElementById("late").textContent = "Late content arrived"; }, 5000);
  </script>
</body>
</html>`;

beforeAll(async () => {
  site = await startSite();
  site.route("/article", ARTICLE);
  scraper = await startScraper({ allowedHosts: [`127.0.0.1:${site.port}`] });
});

afterAll(async () => {
  await scraper?.close();
  await site?.close();
});

describe("POST /scrape", () => {
  it("returns markdown, html, metadata and a null screenshot", async () => {
    const res = await post(scraper.url, "/scrape", { url: `${site.origin}/article` });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    const data = res.body.data as Json;
    expect(data.screenshot).toBeNull();
    expect(data.html).toContain("Rendered by script at once");
    expect(data.markdown).toContain("# Rigging basics");
    expect(data.markdown).toContain("Rendered by script at once");
    // Content injected 5 s after the script runs is absent without waitFor.
    expect(data.markdown).not.toContain("Late content arrived");
    expect(data.metadata).toMatchObject({
      title: "Capstan Field Notes",
      description: "Notes from the field about rigging.",
      language: "en-GB",
      keywords: "rigging, sailing",
      ogTitle: "Field Notes (OG)",
      ogDescription: "OG description",
      ogImage: `${site.origin}/img/cover.png`,
      ogType: "article",
      ogSiteName: "Capstan",
      canonical: `${site.origin}/articles/field-notes`,
      sourceURL: `${site.origin}/article`,
      url: `${site.origin}/article`,
      statusCode: 200,
    });
  });

  it("waits for script-injected content with waitFor", async () => {
    const res = await post(scraper.url, "/scrape", { url: `${site.origin}/article`, pageOptions: { waitFor: 8000 } });
    expect(res.status).toBe(200);
    expect((res.body.data as Json).markdown).toContain("Late content arrived");
  });

  it("turns a table into a GFM table and makes links absolute and clean", async () => {
    const res = await post(scraper.url, "/scrape", { url: `${site.origin}/article` });
    const md = (res.body.data as Json).markdown as string;
    expect(md).toMatch(/\| Knot \| Use \|\n\| --- \| --- \|\n\| Bowline \| Loop \|\n\| Cleat hitch \| Mooring \|/);
    expect(md).toContain(`[guide to knots](${site.origin}/docs/knots?x=1)`);
    expect(md).not.toContain("javascript:");
    expect(md).toContain("a script link");
  });

  it("drops page chrome by default (onlyMainContent, as in Firecrawl v1) and keeps it when asked", async () => {
    const main = await post(scraper.url, "/scrape", { url: `${site.origin}/article` });
    const md = (main.body.data as Json).markdown as string;
    expect(md).toContain("# Rigging basics");
    expect(md).not.toContain("Footer legal text");
    expect(md).not.toContain("Site banner text");
    expect(md).not.toContain("About us");
    const full = await post(scraper.url, "/scrape", {
      url: `${site.origin}/article`,
      pageOptions: { onlyMainContent: false },
    });
    expect((full.body.data as Json).markdown).toContain("Footer legal text");
  });

  it.each([
    ["application/json", '{"a_b": [1, 2], "c": "*x* <y>"}'],
    ["text/plain; charset=utf-8", "# not a heading\nx_y = 1 <tag> \\ end"],
  ])("passes a %s response through unescaped", async (type, body) => {
    site.route("/raw", (_req, res) => {
      res.writeHead(200, { "content-type": type });
      res.end(body);
    });
    const res = await post(scraper.url, "/scrape", { url: `${site.origin}/raw` });
    expect(res.status).toBe(200);
    expect((res.body.data as Json).markdown).toBe(body);
  });

  it("fences a documentation page's <pre> verbatim with its language, through Chromium", async () => {
    site.route(
      "/doc",
      `<html><body><div role="main"><h1>Doc<a class="headerlink" href="#doc">¶</a></h1>
       <div class="highlight-python3 notranslate"><div class="highlight"><pre><span class="gp">&gt;&gt;&gt; </span>x == 0
<span class="kc">True</span></pre></div></div></div></body></html>`,
    );
    const res = await post(scraper.url, "/scrape", { url: `${site.origin}/doc` });
    expect((res.body.data as Json).markdown).toBe("# Doc\n\n```python3\n>>> x == 0\nTrue\n```");
  });

  it("runs extractors: text, attribute and list forms", async () => {
    const res = await post(scraper.url, "/scrape", {
      url: `${site.origin}/article`,
      extractors: {
        heading: "main h1",
        price: ".price",
        sku: ".price@data-sku",
        link: "main a@href",
        tags: { selector: ".tags li", all: true },
        missing: ".does-not-exist",
      },
    });
    expect(res.status).toBe(200);
    expect((res.body.data as Json).extracted).toEqual({
      heading: "Rigging basics",
      price: "42.50 EUR",
      sku: "SKU-42",
      link: `${site.origin}/docs/knots?x=1`,
      tags: ["rope", "sail", "mast"],
      missing: null,
    });
  });

  it("rejects an invalid selector before rendering", async () => {
    const before = site.hits.length;
    const res = await post(scraper.url, "/scrape", { url: `${site.origin}/article`, extractors: { bad: "p[[" } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, code: "BAD_SELECTOR" });
    expect(site.hits.length).toBe(before);
  });

  it("returns a PNG screenshot of the viewport when asked", async () => {
    const res = await post(scraper.url, "/scrape", {
      url: `${site.origin}/article`,
      pageOptions: { screenshot: true },
    });
    expect(res.status).toBe(200);
    const png = Buffer.from((res.body.data as Json).screenshot as string, "base64");
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(png.subarray(12, 16).toString("ascii")).toBe("IHDR");
    expect(png.readUInt32BE(16)).toBe(1280);
    expect(png.readUInt32BE(20)).toBe(800);
  });

  it("reports the target's status code for an error page", async () => {
    const res = await post(scraper.url, "/scrape", { url: `${site.origin}/nowhere` });
    expect(res.status).toBe(200);
    expect((res.body.data as Json).metadata).toMatchObject({ statusCode: 404, title: "Not found" });
  });

  it("loads the page again on a reused page when only the fragment differs", async () => {
    // Pooled pages keep the previous scrape's document: the same URL with a fragment must not
    // become a same-document navigation that returns the old DOM.
    let visits = 0;
    site.route("/visit", (_req, res) => {
      visits++;
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(`<html><body><h1>Visit ${visits}</h1></body></html>`);
    });
    const first = await post(scraper.url, "/scrape", { url: `${site.origin}/visit` });
    expect((first.body.data as Json).markdown).toBe("# Visit 1");
    await new Promise((r) => setTimeout(r, 300)); // the page is back in the pool
    const second = await post(scraper.url, "/scrape", { url: `${site.origin}/visit#part` });
    expect((second.body.data as Json).markdown).toBe("# Visit 2");
    const third = await post(scraper.url, "/scrape", { url: `${site.origin}/visit#part` });
    expect((third.body.data as Json).markdown).toBe("# Visit 3");
  });
});
