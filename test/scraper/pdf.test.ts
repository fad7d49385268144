// A PDF URL scraped for its Markdown: the rendering service fetches it through the SSRF guard
// (bounded by maxResourceBytes and the scrape's timeout), converts it with the shared converter
// (@capstan/shared/documents) and hands it on as text/markdown, which the API passes through.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makePdf } from "../../services/shared/src/documents/pdf.fixture.ts";
import { type Json, post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

let site: Site;
let scraper: Scraper;
let small: Scraper;
let pdf: Buffer;

beforeAll(async () => {
  pdf = await makePdf({
    title: "Release notes",
    sections: [
      {
        heading: "What changed",
        paragraphs: ["Knowledge bases now take uploaded documents through the public documents API."],
        bullets: ["PDF to Markdown", "Write-scoped keys"],
      },
    ],
  });
  site = await startSite();
  site.route("/notes.pdf", (_req, res) => {
    res.writeHead(200, { "content-type": "application/pdf" });
    res.end(pdf);
  });
  const allowedHosts = [`127.0.0.1:${site.port}`];
  scraper = await startScraper({ allowedHosts });
  small = await startScraper({ allowedHosts, maxResourceBytes: 1024 });
});

afterAll(async () => {
  await scraper?.close();
  await small?.close();
  await site?.close();
});

describe("a PDF URL", () => {
  it("is answered with its Markdown", async () => {
    const res = await post(scraper.url, "/scrape", { url: `${site.origin}/notes.pdf` });
    expect(res.status).toBe(200);
    const data = res.body.data as Json;
    expect(data.markdown).toContain("# Release notes");
    expect(data.markdown).toMatch(/^## What changed$/m);
    expect(data.markdown).toContain("Knowledge bases now take uploaded documents through the public documents API.");
    expect(data.markdown).toMatch(/^- Write-scoped keys$/m);
    expect(data.metadata).toMatchObject({ statusCode: 200, sourceURL: `${site.origin}/notes.pdf` });
  });

  it("larger than the resource limit is refused, not converted", async () => {
    const res = await post(small.url, "/scrape", { url: `${site.origin}/notes.pdf` });
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ success: false, code: "UPSTREAM_ERROR" });
    expect(String(res.body.error)).toMatch(/larger than 1024 bytes/);
  });
});
