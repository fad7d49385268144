// The scraper's metrics and health answer on its admin port only: the API's port (the one its
// Service and clients use) answers 404 for them, with auth on or off and however the path is
// spelt, and the admin port serves nothing else (it once routed the whole API without the key).
// The reference's GET /health stays on the API's port.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spellings } from "../../services/shared/src/http.fixture.ts";
import { rawRequest } from "../ground/raw-http.ts";
import { type Scraper, startScraper } from "./helpers.ts";

const KEY = "admin-port-test-key";
let open: Scraper;
let keyed: Scraper;

beforeAll(async () => {
  [open, keyed] = await Promise.all([startScraper(), startScraper({ apiKey: KEY, authEnabled: true })]);
});

afterAll(async () => {
  await Promise.all([open?.close(), keyed?.close()]);
});

describe("the scraper's admin port", () => {
  for (const path of ["/metrics", "/healthz", "/readyz"]) {
    it(`${path}: 404 on the API's port (auth off and on, with or without the key), served on the admin port`, async () => {
      for (const [s, headers] of [
        [open, {}],
        [keyed, {}],
        [keyed, { authorization: `Bearer ${KEY}` }],
      ] as const) {
        const res = await fetch(`${s.url}${path}`, { headers });
        expect(res.status).toBe(404);
        expect(await res.json()).toMatchObject({ success: false, code: "NOT_FOUND" });
        // Another method on the same path is unknown too (404, not a 405 naming GET).
        expect((await fetch(`${s.url}${path}`, { method: "POST", headers })).status).toBe(404);
      }
      for (const s of [open, keyed]) {
        const res = await fetch(`${s.adminUrl}${path}`);
        // /readyz may be 503 while the renderer warms up; it is answered either way.
        expect(path === "/readyz" ? [200, 503] : [200]).toContain(res.status);
      }
    });
  }

  it("the admin port serves the API's metrics, without a key", async () => {
    const text = await (await fetch(`${keyed.adminUrl}/metrics`)).text();
    expect(text).toContain("http_requests_total");
  });

  it("no spelling of an admin path (percent-encoded, dot segments, slashes, case) reaches it on the API's port", async () => {
    for (const path of ["/metrics", "/healthz", "/readyz"]) {
      for (const spelt of spellings(path)) {
        for (const s of [open, keyed]) {
          const res = await rawRequest(s.url, spelt);
          expect(res.status, `GET ${spelt}`).toBe(404);
          expect(res.body).not.toContain("http_requests_total");
        }
      }
    }
  });

  it("the admin port serves metrics and health only: the API is not there, with or without the key", async () => {
    const scrape = JSON.stringify({ url: "http://127.0.0.1:1/" });
    for (const [method, path, body] of [
      ["POST", "/scrape", scrape],
      ["POST", "/scrape/bulk", JSON.stringify({ urls: ["http://127.0.0.1:1/"] })],
      ["POST", "/crawl", scrape],
      ["POST", "/map", scrape],
      ["POST", "/batch/scrape", JSON.stringify({ urls: ["http://127.0.0.1:1/"] })],
      ["POST", "/search", JSON.stringify({ query: "x" })],
      ["GET", "/health", undefined],
      ["GET", "/openapi.json", undefined],
    ] as const) {
      for (const headers of [{}, { authorization: `Bearer ${KEY}` }] as Record<string, string>[]) {
        const res = await rawRequest(keyed.adminUrl, path, { method, headers, ...(body ? { body } : {}) });
        expect(res.status, `${method} ${path} on the admin port`).toBe(404);
        expect(JSON.parse(res.body)).toMatchObject({ success: false, code: "NOT_FOUND" });
      }
    }
    // The same request on the API's port still needs the key.
    const res = await rawRequest(keyed.url, "/scrape", { method: "POST", body: scrape });
    expect(res.status).toBe(401);
  });

  it("GET /health (the reference's liveness check) stays on the API's port, without a key", async () => {
    expect((await fetch(`${keyed.url}/health`)).status).toBe(200);
    // and the API itself still needs the key
    expect((await fetch(`${keyed.url}/scrape`, { method: "POST" })).status).toBe(401);
  });
});
