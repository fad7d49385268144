// Firecrawl's official SDKs, unchanged, against the scraper's /v1 and /v2 routes: firecrawl-js
// 1.x (v1 API) and 4.x (v2 API) from npm, and firecrawl-py 4.x from PyPI (v2, and its v1 client)
// in the virtual environment scripts/setup.d/66-firecrawl-py.sh makes. Each scrapes, maps and
// crawls a loopback site through a real scraper (real Chromium, jobs shared through the test
// ground's Redis, API key required); what the scraper does not do is refused in Firecrawl's
// error shape, which the SDKs surface as their own errors with the message.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import V1App from "firecrawl-v1";
import Firecrawl from "firecrawl-v4";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_BACKENDS, type Json, post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

const KEY = "cap_scr_firecrawl-sdk-test-key";
const PY_VERSION = "4.55.0";
const python = join(
  process.env.CAPSTAN_CACHE ?? join(homedir(), ".cache", "capstan"),
  "firecrawl-py",
  PY_VERSION,
  "bin",
  "python",
);
let site: Site;
let scraper: Scraper;
const PAGES = ["/", "/guide", "/guide/install", "/guide/upgrade", "/about"];

const html = (title: string, links: string[]) =>
  `<!DOCTYPE html><html><head><title>${title}</title></head><body><main><h1>${title}</h1>` +
  `<p>The ${title} page.</p>${links.map((l) => `<a href="${l}">${l}</a>`).join(" ")}</main></body></html>`;

beforeAll(async () => {
  site = await startSite();
  site.route("/", html("Home", ["/guide", "/about"]));
  site.route("/guide", html("Guide", ["/", "/guide/install", "/guide/upgrade"]));
  site.route("/guide/install", html("Install", ["/guide"]));
  site.route("/guide/upgrade", html("Upgrade", ["/guide"]));
  site.route("/about", html("About", ["/"]));
  const shared = (JOB_BACKENDS[1] as (typeof JOB_BACKENDS)[number])[1]();
  scraper = await startScraper({
    allowedHosts: [`127.0.0.1:${site.port}`],
    workerConcurrency: 3,
    authEnabled: true,
    apiKey: KEY,
    ...shared,
  });
});

afterAll(async () => {
  await scraper?.close();
  await site?.close();
});

const paths = (urls: string[]) => urls.map((u) => new URL(u).pathname).sort();

describe("firecrawl-js 1.x (v1 API)", () => {
  const app = () => new V1App({ apiKey: KEY, apiUrl: scraper.url });

  it("scrapes, maps and crawls", async () => {
    const page = await app().scrapeUrl(`${site.origin}/guide`, { formats: ["markdown", "links"] });
    if (!page.success) throw new Error(page.error);
    expect(page.markdown).toContain("# Guide");
    expect(page.links).toContain(`${site.origin}/guide/install`);
    expect(page.metadata?.sourceURL).toBe(`${site.origin}/guide`);

    const map = await app().mapUrl(`${site.origin}/`);
    if (!map.success) throw new Error(map.error);
    expect(paths(map.links ?? [])).toEqual(["/", "/about", "/guide"]);

    const crawl = await app().crawlUrl(`${site.origin}/`, { limit: 20, scrapeOptions: { formats: ["markdown"] } }, 1);
    if (!crawl.success) throw new Error(crawl.error);
    expect(crawl.status).toBe("completed");
    expect(paths(crawl.data.map((d) => String(d.metadata?.sourceURL)))).toEqual([...PAGES].sort());
    expect(crawl.data.find((d) => d.metadata?.sourceURL === `${site.origin}/about`)?.markdown).toContain("# About");
  });

  it("refuses what the scraper does not do, with the reason, and a wrong key", async () => {
    await expect(app().scrapeUrl(`${site.origin}/`, { formats: ["json"] })).rejects.toThrow(/unsupported format/);
    await expect(app().scrapeUrl(`${site.origin}/`, { actions: [{ type: "wait", milliseconds: 10 }] })).rejects.toThrow(
      /actions is not supported/,
    );
    const wrong = new V1App({ apiKey: "wrong", apiUrl: scraper.url });
    await expect(wrong.scrapeUrl(`${site.origin}/`)).rejects.toMatchObject({ statusCode: 401 });
  });
});

describe("firecrawl-js 4.x (v2 API)", () => {
  const app = () => new Firecrawl({ apiKey: KEY, apiUrl: scraper.url });

  it("scrapes, maps and crawls", async () => {
    const page = await app().scrape(`${site.origin}/guide`, { formats: ["markdown", { type: "links" }] });
    expect(page.markdown).toContain("# Guide");
    expect(page.links).toContain(`${site.origin}/guide/install`);

    const map = await app().map(`${site.origin}/`, { sitemap: "skip" });
    expect(paths(map.links.map((l) => l.url))).toEqual(["/", "/about", "/guide"]);

    const crawl = await app().crawl(`${site.origin}/`, { limit: 20, pollInterval: 1, timeout: 120 });
    expect(crawl.status).toBe("completed");
    expect(paths(crawl.data.map((d) => String(d.metadata?.sourceURL)))).toEqual([...PAGES].sort());
    // The /v2 job is the same job as unprefixed: its status reads there too, in the scraper's shape.
    const started = await app().startCrawl(`${site.origin}/guide`, { limit: 2 });
    expect(started.url).toBe(`${scraper.url}/v2/crawl/${started.id}`);
  });

  it("refuses what the scraper does not do, in Firecrawl's error shape", async () => {
    await expect(app().scrape(`${site.origin}/`, { formats: ["summary"] })).rejects.toThrow(/unsupported format/);
    await expect(app().crawl(`${site.origin}/`, { prompt: "only the docs" })).rejects.toThrow(
      /prompt is not supported/,
    );
    const res = await post(
      scraper.url,
      "/v2/extract",
      { urls: [`${site.origin}/`] },
      { authorization: `Bearer ${KEY}` },
    );
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ success: false, code: "FIRECRAWL_UNSUPPORTED" });
    expect(String(res.body.error)).toContain("POST /v2/extract");
  });
});

const PY = `
import json, os, sys
from firecrawl import Firecrawl, V1FirecrawlApp
url, key, origin = os.environ["SCRAPER_URL"], os.environ["SCRAPER_KEY"], os.environ["SITE"]
out = {}
app = Firecrawl(api_key=key, api_url=url)
doc = app.scrape(origin + "/guide", formats=["markdown", "links"])
out["scrape"] = {"markdown": doc.markdown, "links": doc.links}
out["map"] = [l.url for l in app.map(origin + "/", sitemap="skip").links]
job = app.crawl(origin + "/", limit=20, poll_interval=1, timeout=120)
out["crawl"] = {"status": job.status, "urls": [d.metadata.source_url for d in job.data]}
try:
    app.scrape(origin + "/", formats=["summary"])
    out["refused"] = None
except Exception as e:
    out["refused"] = str(e)
v1 = V1FirecrawlApp(api_key=key, api_url=url)
v1crawl = v1.crawl_url(origin + "/", limit=20, poll_interval=1)
out["v1crawl"] = {"status": v1crawl.status, "urls": [d.metadata["sourceURL"] for d in v1crawl.data]}
out["v1map"] = v1.map_url(origin + "/").links
print(json.dumps(out))
`;

describe("firecrawl-py 4.x (v2 API, and its v1 client)", () => {
  it("scrapes, maps and crawls", async () => {
    if (!existsSync(python)) {
      throw new Error(
        `${python} is missing: run \`bash scripts/setup.d/66-firecrawl-py.sh\` (firecrawl-py ${PY_VERSION})`,
      );
    }
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(
        python,
        ["-c", PY],
        { env: { ...process.env, SCRAPER_URL: scraper.url, SCRAPER_KEY: KEY, SITE: site.origin }, timeout: 240_000 },
        (err, out, errOut) => (err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(out)),
      );
    });
    const out = JSON.parse(stdout) as Json;
    expect(out.scrape.markdown).toContain("# Guide");
    expect(out.scrape.links).toContain(`${site.origin}/guide/install`);
    expect(paths(out.map)).toEqual(["/", "/about", "/guide"]);
    expect(out.crawl.status).toBe("completed");
    expect(paths(out.crawl.urls)).toEqual([...PAGES].sort());
    expect(out.refused).toMatch(/unsupported format/);
    expect(out.v1crawl.status).toBe("completed");
    expect(paths(out.v1crawl.urls)).toEqual([...PAGES].sort());
    expect(paths(out.v1map)).toEqual(["/", "/about", "/guide"]);
  }, 300_000);
});
