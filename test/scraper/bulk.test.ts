// /scrape/bulk: per-URL results in input order, each with its own success or error, and
// the documented maximum; crash recovery of the rendering service.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../ground/ports.ts";
import { type Json, metricValue, post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

let site: Site;
let scraper: Scraper;
let closedPort: number;

beforeAll(async () => {
  site = await startSite();
  for (let i = 0; i < 6; i++) {
    site.route(`/p${i}`, `<html><head><title>Page ${i}</title></head><body><h1>Page ${i}</h1></body></html>`);
  }
  site.route("/slow", (_req, res) => {
    setTimeout(() => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><head><title>Slow</title></head><body>slow</body></html>");
    }, 3000);
  });
  closedPort = await freePort();
  scraper = await startScraper({
    allowedHosts: [`127.0.0.1:${site.port}`, `127.0.0.1:${closedPort}`],
    bulkMaxUrls: 10,
  });
});

afterAll(async () => {
  await scraper?.close();
  await site?.close();
});

describe("POST /scrape/bulk", () => {
  it("answers per URL, in input order, with a mix of good, failing and blocked URLs", async () => {
    const urls = [
      `${site.origin}/slow`,
      `${site.origin}/p1`,
      "http://169.254.169.254/latest/meta-data/",
      `http://127.0.0.1:${closedPort}/`,
      "not a url",
      `${site.origin}/p2`,
    ];
    const res = await post(scraper.url, "/scrape/bulk", { urls, extractors: { h: "h1" } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, total: 6, succeeded: 3, failed: 3 });
    const data = res.body.data as Json[];
    expect(data.map((d) => d.url)).toEqual(urls);
    expect(data.map((d) => d.success)).toEqual([true, true, false, false, false, true]);
    expect(data[0].data.metadata.title).toBe("Slow");
    expect(data[1].data.extracted).toEqual({ h: "Page 1" });
    expect(data[5].data.metadata.title).toBe("Page 2");
    expect(data[2]).toMatchObject({ success: false, code: "BLOCKED_TARGET", status: 403 });
    expect(data[3]).toMatchObject({ success: false, code: "UNREACHABLE", status: 502 });
    expect(data[4]).toMatchObject({ success: false, code: "BAD_URL", status: 400 });
    const duration = (outcome: string) =>
      metricValue(scraper.registry, "capstan_scraper_scrape_duration_seconds", { outcome });
    expect(await duration("ok")).toBe(3);
    expect(await duration("BLOCKED_TARGET")).toBe(1);
    expect(await duration("UNREACHABLE")).toBe(1);
  });

  it("refuses more URLs than the maximum, and an empty list", async () => {
    const many = Array.from({ length: 11 }, (_, i) => `${site.origin}/p${i % 6}`);
    const tooMany = await post(scraper.url, "/scrape/bulk", { urls: many });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toContain("at most 10");
    const empty = await post(scraper.url, "/scrape/bulk", { urls: [] });
    expect(empty.status).toBe(400);
  });
});

describe("crash recovery", () => {
  it("replaces a dead browser: the scrape in flight fails cleanly, the next succeeds", async () => {
    const restarts = await metricValue(scraper.renderRegistry, "capstan_scraper_browser_restarts_total");
    const inFlight = post(scraper.url, "/scrape", { url: `${site.origin}/slow` });
    // Crash once the page is rendering.
    for (let i = 0; i < 400 && scraper.render.renderer.pool.pagesInUse === 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    await scraper.render.renderer.pool.crash();
    const failed = await inFlight;
    expect(failed.status).toBe(503);
    expect(failed.body).toMatchObject({ success: false, code: "RENDERER_UNAVAILABLE" });
    expect(failed.headers.get("retry-after")).toBe("1");

    let next = await post(scraper.url, "/scrape", { url: `${site.origin}/p3` });
    for (let i = 0; i < 20 && next.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 500));
      next = await post(scraper.url, "/scrape", { url: `${site.origin}/p3` });
    }
    expect(next.status).toBe(200);
    expect((next.body.data as Json).metadata.title).toBe("Page 3");
    expect(await metricValue(scraper.renderRegistry, "capstan_scraper_browser_restarts_total")).toBe(restarts + 1);
  });
});
