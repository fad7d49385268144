// The scraper API's plugin structure, with no browser: the key check belongs to the API plugin
// (scrape, bulk, web search, crawl, batch, map) and to nothing else, so /health, /openapi.json and the reference page
// answer without a key and an unknown path is a 404 rather than a 401; bodies are validated by the
// route schemas in the scraper's error shape. Nothing here reaches a renderer (its client refuses).
import { afterEach, describe, expect, it } from "vitest";
import { scraperConfig } from "../config.ts";
import { buildApp } from "./app.ts";
import type { RenderClient } from "./render-client.ts";

const KEY = "cap_scr_unit-test-key";
const renderClient: RenderClient = {
  render: () => Promise.reject(new Error("no renderer in unit tests")),
  probe: async () => false,
  close: async () => {},
};

let app: ReturnType<typeof buildApp> | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

function keyed() {
  app = buildApp(scraperConfig({ logLevel: "silent", apiKey: KEY, authEnabled: true }), { renderClient });
  return app;
}

describe("the scraper API's plugins", () => {
  it("asks the key on the API's routes only: /health, /openapi.json and /docs answer without it", async () => {
    const a = keyed();
    const routes: [string, string][] = [
      ...["/scrape", "/scrape/bulk", "/search", "/crawl", "/batch/scrape", "/map"].map((u): [string, string] => [
        "POST",
        u,
      ]),
      ["GET", "/crawl/0b0c6a43-57b4-4e47-a2d3-0e3c5ba1d8a1"],
      ["DELETE", "/crawl/0b0c6a43-57b4-4e47-a2d3-0e3c5ba1d8a1"],
      ["GET", "/batch/scrape/0b0c6a43-57b4-4e47-a2d3-0e3c5ba1d8a1/errors"],
    ];
    for (const [method, url] of routes) {
      const res = await a.inject({ method: method as "GET", url, ...(method === "POST" ? { payload: {} } : {}) });
      expect(res.statusCode, url).toBe(401);
      expect(res.json()).toMatchObject({ success: false, code: "UNAUTHORIZED" });
      expect(res.headers["www-authenticate"]).toContain("Bearer");
    }
    expect((await a.inject({ method: "GET", url: "/health" })).statusCode).toBe(200);
    const doc = await a.inject({ method: "GET", url: "/openapi.json" });
    expect(doc.statusCode).toBe(200);
    expect(doc.json().openapi).toBe("3.1.0");
    const page = await a.inject({ method: "GET", url: "/docs/" });
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toContain("text/html");
  });

  it("an unknown path is a 404 in the error shape, key or not (no hook filters by URL)", async () => {
    const a = keyed();
    const res = await a.inject({ method: "POST", url: "/crawls", payload: {} });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ success: false, code: "NOT_FOUND" });
  });

  it("validates bodies by the route schemas: 400 BAD_REQUEST naming the field", async () => {
    const a = keyed();
    const auth = { authorization: `Bearer ${KEY}` };
    const bad = await a.inject({ method: "POST", url: "/scrape", headers: auth, payload: { url: 42 } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ success: false, code: "BAD_REQUEST" });
    expect(bad.json().error).toContain("url:");
    const empty = await a.inject({ method: "POST", url: "/scrape/bulk", headers: auth, payload: { urls: [] } });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error).toContain("at least one URL");
    const tooMany = await a.inject({
      method: "POST",
      url: "/scrape/bulk",
      headers: auth,
      payload: { urls: Array.from({ length: 101 }, (_, i) => `https://example.org/${i}`) },
    });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json().error).toContain("URLs per bulk request");
  });

  it("publishes scrape, bulk, web search, jobs, map and health, every error in the {success:false,error,code} shape", async () => {
    const doc = (await keyed().inject({ method: "GET", url: "/openapi.json" })).json();
    const jobPaths = ["/batch/scrape", "/batch/scrape/{id}", "/batch/scrape/{id}/errors", "/crawl", "/crawl/{id}"];
    jobPaths.push("/crawl/{id}/errors", "/map");
    expect(Object.keys(doc.paths).sort()).toEqual(
      [
        ...jobPaths,
        "/health",
        "/scrape",
        "/scrape/bulk",
        "/search",
        // Firecrawl's v1 and v2 routes (firecrawl/dialects.ts), for its SDKs.
        ...["v1", "v2"].flatMap((v) => [...jobPaths, "/scrape"].map((p) => `/${v}${p}`)),
      ].sort(),
    );
    expect(doc.paths["/crawl/{id}"].delete.responses["409"].description).toContain("JOB_FINISHED");
    expect(doc.paths["/crawl/{id}"].get.responses["404"].description).toContain("JOB_NOT_FOUND");
    const scrape = doc.paths["/scrape"].post;
    expect(scrape.security).toEqual([{ scraperKey: [] }]);
    expect(doc.paths["/health"].get.security).toEqual([]);
    for (const status of ["400", "401", "403", "408", "502", "503"]) {
      expect(scrape.responses[status].content["application/json"].schema.$ref).toBe(
        "#/components/schemas/ScraperError",
      );
    }
    expect(scrape.responses["403"].description).toContain("BLOCKED_TARGET");
    expect(doc.components.schemas.ScraperError.required).toEqual(["success", "error", "code"]);
  });
});
