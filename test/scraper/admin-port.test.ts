// The scraper's metrics and health answer on its admin port only: the API's port (the one its
// Service and clients use) answers 404 for them, with auth on or off, and no longer lets /metrics
// through without a key. The reference's GET /health stays on the API's port.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

  it("GET /health (the reference's liveness check) stays on the API's port, without a key", async () => {
    expect((await fetch(`${keyed.url}/health`)).status).toBe(200);
    // and the API itself still needs the key
    expect((await fetch(`${keyed.url}/scrape`, { method: "POST" })).status).toBe(401);
  });
});
