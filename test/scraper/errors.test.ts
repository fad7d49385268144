// Error statuses of the scraper API against a real renderer: 400 bad input, 401 auth, 415
// content, 502 unreachable, 408 timeouts (REQUEST_TIMEOUT/pageOptions.timeout, TASK_TIMEOUT, as Firecrawl answers them),
// 503 + Retry-After when the queue is full.
import type { ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { freePort } from "../ground/ports.ts";
import { type Json, post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

let site: Site;
const held: ServerResponse[] = [];
const scrapers: Scraper[] = [];
const gated: (() => void)[] = [];
let gateOpen = false;

/** A scraper for one test (closed when the test ends), or for the file with `{ scoped: false }`. */
async function scraperWith(overrides: Record<string, unknown>, opts: { scoped?: boolean } = {}): Promise<Scraper> {
  const s = await startScraper({ allowedHosts: [`127.0.0.1:${site.port}`], ...overrides });
  if (opts.scoped === false) scrapers.push(s);
  else onTestFinished(() => s.close());
  return s;
}

beforeAll(async () => {
  site = await startSite();
  site.route("/ok", "<html><head><title>OK</title></head><body><p>fine</p></body></html>");
  site.route("/hang", (_req, res) => {
    held.push(res); // never answered until the test ends
  });
  site.route("/gate", (_req, res) => {
    const answer = () => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><head><title>Gate</title></head><body>opened</body></html>");
    };
    if (gateOpen) answer();
    else gated.push(answer);
  });
  site.route("/pdf", (_req, res) => {
    res.writeHead(200, { "content-type": "application/pdf" });
    res.end("%PDF-1.4\n");
  });
});

afterAll(async () => {
  for (const res of held) res.destroy();
  await Promise.all(scrapers.map((s) => s.close()));
  await site?.close();
});

describe("the rendering service's port", () => {
  it("renders only for the scraper API: with an API key, POST /scrape needs that key", async () => {
    const key = "render-test-api-key";
    const scraper = await scraperWith({ apiKey: key, authEnabled: true });
    const target = { url: `${site.origin}/ok` };
    const anonymous = await post(scraper.renderUrl, "/scrape", target);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toMatchObject({ success: false, code: "UNAUTHORIZED" });
    expect((await post(scraper.renderUrl, "/scrape", target, { authorization: "Bearer wrong-key-value" })).status).toBe(
      401,
    );
    // The probe stays open (it renders nothing), and the API, which sends the key, still renders.
    expect((await fetch(`${scraper.renderUrl}/scrape`)).status).toBe(200);
    const viaApi = await post(scraper.url, "/scrape", target, { authorization: `Bearer ${key}` });
    expect(viaApi.status).toBe(200);
  });
});

describe("bad input", () => {
  let scraper: Scraper;
  beforeAll(async () => {
    scraper = await scraperWith({}, { scoped: false });
  });

  it.each([
    ["missing url", { pageOptions: {} }, "BAD_REQUEST"],
    ["url not a string", { url: 42 }, "BAD_REQUEST"],
    ["relative url", { url: "/just/a/path" }, "BAD_URL"],
    ["ftp scheme", { url: "ftp://example.org/file" }, "BAD_URL"],
    ["file scheme", { url: "file:///etc/passwd" }, "BAD_URL"],
    ["negative waitFor", { url: "http://127.0.0.1/", pageOptions: { waitFor: -1 } }, "BAD_REQUEST"],
    ["screenshot not boolean", { url: "http://127.0.0.1/", pageOptions: { screenshot: "yes" } }, "BAD_REQUEST"],
  ])("%s → 400", async (_name, body, code) => {
    const res = await post(scraper.url, "/scrape", body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, code });
    expect(typeof res.body.error).toBe("string");
  });

  it("malformed JSON → 400 in the error shape", async () => {
    const res = await post(scraper.url, "/scrape", "{not json");
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, code: "BAD_REQUEST" });
  });

  it("wrong method on a known route → 405 with Allow", async () => {
    const res = await fetch(`${scraper.url}/scrape`, { method: "DELETE" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    expect(await res.json()).toMatchObject({ success: false, code: "METHOD_NOT_ALLOWED" });
  });

  it("a text/plain body → 415 naming application/json", async () => {
    const res = await post(scraper.url, "/scrape", JSON.stringify({ url: `${site.origin}/ok` }), {
      "content-type": "text/plain",
    });
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ success: false, code: "MEDIA_TYPE" });
    expect(String(res.body.error)).toContain("application/json");
  });

  it("unknown route → 404 in the error shape", async () => {
    const res = await post(scraper.url, "/crawls", { url: `${site.origin}/ok` });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ success: false, code: "NOT_FOUND" });
  });

  it("a damaged PDF → 415 saying why", async () => {
    const res = await post(scraper.url, "/scrape", { url: `${site.origin}/pdf` });
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ success: false, code: "UNSUPPORTED_CONTENT" });
    expect(String(res.body.error)).toMatch(/application\/pdf \(the PDF cannot be read/);
  });

  it("a closed port → 502", async () => {
    const port = await freePort();
    const s = await scraperWith({ allowedHosts: [`127.0.0.1:${port}`] });
    const res = await post(s.url, "/scrape", { url: `http://127.0.0.1:${port}/` });
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ success: false, code: "UNREACHABLE" });
    expect(res.body.error).toContain("ECONNREFUSED");
  });

  it("GET /health answers a liveness body", async () => {
    const res = await fetch(`${scraper.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ok", service: "capstan-scraper" });
  });

  it("GET /scrape on the rendering service answers the probe body", async () => {
    const res = await fetch(`${scraper.renderUrl}/scrape`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ok", browser: "connected", maxPages: 2 });
  });
});

describe("auth", () => {
  const KEY = "cap_scr_test-key-0123456789";
  let scraper: Scraper;
  beforeAll(async () => {
    scraper = await scraperWith({ authEnabled: true, apiKey: KEY }, { scoped: false });
  });

  it("refuses a missing or wrong key with 401", async () => {
    const none = await post(scraper.url, "/scrape", { url: `${site.origin}/ok` });
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ success: false, code: "UNAUTHORIZED" });
    expect(none.headers.get("www-authenticate")).toContain("Bearer");
    const wrong = await post(scraper.url, "/scrape", { url: `${site.origin}/ok` }, { authorization: "Bearer nope" });
    expect(wrong.status).toBe(401);
    const bulk = await post(scraper.url, "/scrape/bulk", { urls: [`${site.origin}/ok`] });
    expect(bulk.status).toBe(401);
  });

  it("accepts the right key; /health needs none", async () => {
    const ok = await post(scraper.url, "/scrape", { url: `${site.origin}/ok` }, { authorization: `Bearer ${KEY}` });
    expect(ok.status).toBe(200);
    expect((ok.body.data as Json).metadata.title).toBe("OK");
    expect((await fetch(`${scraper.url}/health`)).status).toBe(200);
  });

  it("with auth off, no key is needed", async () => {
    const open = await scraperWith({});
    const res = await post(open.url, "/scrape", { url: `${site.origin}/ok` });
    expect(res.status).toBe(200);
  });
});

describe("timeouts and queue", () => {
  it("a page that never answers → 408 after pageOptions.timeout", async () => {
    const s = await scraperWith({});
    const res = await post(s.url, "/scrape", { url: `${site.origin}/hang`, pageOptions: { timeout: 1500 } });
    expect(res.status).toBe(408);
    expect(res.body).toMatchObject({ success: false, code: "TIMEOUT" });
  });

  it("REQUEST_TIMEOUT applies when the request sets none", async () => {
    const s = await scraperWith({ requestTimeoutMs: 1500 });
    const res = await post(s.url, "/scrape", { url: `${site.origin}/hang` });
    expect(res.status).toBe(408);
    expect(res.body.error).toContain("page load");
  });

  it("TASK_TIMEOUT bounds the whole task → 408", async () => {
    const s = await scraperWith({ taskTimeoutMs: 2000, requestTimeoutMs: 60_000 });
    const res = await post(s.url, "/scrape", { url: `${site.origin}/hang` });
    expect(res.status).toBe(408);
    expect(res.body).toMatchObject({ success: false, code: "TIMEOUT" });
    expect(res.body.error).toContain("TASK_TIMEOUT");
  });

  it("a full queue → 503 with Retry-After", async () => {
    const s = await scraperWith({ workerConcurrency: 1, maxConcurrentRequests: 1, requestTimeoutMs: 60_000 });
    const first = post(s.url, "/scrape", { url: `${site.origin}/gate` });
    const second = post(s.url, "/scrape", { url: `${site.origin}/gate` });
    // Wait until one runs and one waits.
    for (let i = 0; i < 600; i++) {
      const health = (await (await fetch(`${s.url}/health`)).json()) as { queue: { running: number; queued: number } };
      if (health.queue.running === 1 && health.queue.queued === 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const third = await post(s.url, "/scrape", { url: `${site.origin}/ok` });
    expect(third.status).toBe(503);
    expect(third.body).toMatchObject({ success: false, code: "QUEUE_FULL" });
    expect(Number(third.headers.get("retry-after"))).toBeGreaterThan(0);
    const bulk = await post(s.url, "/scrape/bulk", { urls: [`${site.origin}/ok`] });
    expect(bulk.status).toBe(503);
    gateOpen = true;
    for (const answer of gated.splice(0)) answer();
    const done = await Promise.all([first, second]);
    expect(done.map((r) => r.status)).toEqual([200, 200]);
  });
});
