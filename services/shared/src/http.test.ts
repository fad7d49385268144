// The public/internal split of buildBaseApp is decided by which router holds a route: with
// `internal`, metrics, health and the service's internal routes exist only on the internal
// instance, so no spelling of their path reaches them through the public one. Before, the split
// compared the raw URL while the router decoded it: GET /%6detrics on a public port was served.
import { afterAll, describe, expect, it } from "vitest";
import { spellings } from "./http.fixture.ts";
import { buildBaseApp, internalApp } from "./http.ts";
import { createRegistry } from "./metrics.ts";

const app = buildBaseApp({
  service: "spelling-test",
  registry: createRegistry({ defaultMetrics: false }),
  internal: true,
});
internalApp(app).get("/internal/v1/secret", async () => ({ token: "s3cr3t-value" }));
app.get("/v1/public", async () => ({ public: true }));
afterAll(() => app.close());

describe("buildBaseApp with an internal listener", () => {
  it("serves metrics, health and internal routes on the internal instance", async () => {
    const internal = internalApp(app);
    for (const url of ["/metrics", "/healthz", "/readyz", "/internal/v1/secret"]) {
      expect((await internal.inject({ url })).statusCode, url).toBe(200);
    }
    // and the public routes only on the public one
    expect((await internal.inject({ url: "/v1/public" })).statusCode).toBe(404);
    expect((await app.inject({ url: "/v1/public" })).statusCode).toBe(200);
  });

  for (const path of ["/metrics", "/healthz", "/readyz", "/internal/v1/secret"]) {
    it(`${path}: no spelling reaches it on the public instance`, async () => {
      for (const url of spellings(path)) {
        for (const method of ["GET", "POST", "HEAD"] as const) {
          const res = await app.inject({ method, url });
          expect(res.statusCode, `${method} ${url}`).toBe(404);
          expect(res.body).not.toContain("spelling_test_http_requests_total");
          expect(res.body).not.toContain("s3cr3t-value");
        }
      }
    });
  }

  it("without `internal`, the app serves them itself (processes whose every port is internal)", async () => {
    const own = buildBaseApp({ service: "own", registry: createRegistry({ defaultMetrics: false }) });
    expect((await own.inject({ url: "/healthz" })).statusCode).toBe(200);
    expect(() => internalApp(own)).toThrow(/internal/);
    await own.close();
  });
});
