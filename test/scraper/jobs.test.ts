// The job machinery behind /crawl and /batch/scrape, with the real Chromium: paged results
// (`next`, bounded page size), cancel (no fetch after it, counted by the loopback server), a
// running crawl leaves /scrape a worker, expiry (the jobs' clock is the test's), unknown ids, and
// async batch scrapes with their errors.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../ground/ports.ts";
import { finishedJob, getJson, hitsUnder, resultPaths } from "./crawl-site.ts";
import { JOB_BACKENDS, type JobsConfig, post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

let site: Site;
let scraper: Scraper;
let closedPort: number;
let now = Date.now();
/** Requests to /held/* wait here until the test lets them go. */
let release: () => void = () => {};
let held = new Promise<void>((resolve) => {
  release = resolve;
});

const TTL_MS = 60_000;

beforeAll(async () => {
  site = await startSite();
  const html = (title: string, links: string[] = []) =>
    `<html><head><title>${title}</title></head><body><main><h1>${title}</h1>${links
      .map((l) => `<a href="${l}">${l}</a>`)
      .join(" ")}</main></body></html>`;
  site.route(
    "/list/",
    html(
      "List",
      Array.from({ length: 30 }, (_, i) => `/list/${i}`),
    ),
  );
  for (let i = 0; i < 30; i++) site.route(`/list/${i}`, html(`Item ${i}`));
  site.route(
    "/held/",
    html(
      "Held",
      Array.from({ length: 20 }, (_, i) => `/held/${i}`),
    ),
  );
  for (let i = 0; i < 20; i++) {
    site.route(`/held/${i}`, (_req, res) => {
      void held.then(() => {
        res.writeHead(200, { "content-type": "text/html" });
        res.end(html(`Held ${i}`));
      });
    });
  }
  site.route("/free", html("Free"));
  closedPort = await freePort();
});

afterAll(async () => {
  release();
  await site?.close();
});

async function waitFor(what: string, ok: () => boolean, budgetMs = 30_000) {
  const deadline = Date.now() + budgetMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

// The same jobs in the scraper's memory and shared through Redis (BullMQ).
describe.each(JOB_BACKENDS)("jobs %s", (_name, jobsConfig: () => JobsConfig) => {
  beforeAll(async () => {
    site.hits.length = 0;
    held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const shared = jobsConfig();
    scraper = await startScraper(
      {
        allowedHosts: [`127.0.0.1:${site.port}`, `127.0.0.1:${closedPort}`],
        workerConcurrency: 3,
        ...shared,
        jobs: { pageSize: 10, ttlMs: TTL_MS, ...shared.jobs },
      },
      { now: () => now },
    );
  });
  afterAll(async () => {
    release();
    await scraper?.close();
  });

  describe("crawl results", () => {
    it("come in pages of at most SCRAPER_JOB_PAGE_SIZE, linked by next", async () => {
      const started = await post(scraper.url, "/crawl", {
        url: `${site.origin}/list/`,
        limit: 25,
        ignoreSitemap: true,
      });
      const { status, data } = await finishedJob(started.body.url as string);
      expect(status).toMatchObject({ status: "completed", total: 25, completed: 25 });
      expect(status.data).toHaveLength(10);
      expect(status.next).toBe(`${scraper.url}/crawl/${started.body.id}?skip=10`);
      expect(data).toHaveLength(25);
      expect(new Set(resultPaths(data)).size).toBe(25);
      const last = await getJson(`${scraper.url}/crawl/${started.body.id}?skip=20`);
      expect(last.body.data).toHaveLength(5);
      expect(last.body.next).toBeNull();
      const small = await getJson(`${scraper.url}/crawl/${started.body.id}?limit=3`);
      expect(small.body.data).toHaveLength(3);
    });

    it("are gone once the job expires; an unknown id is 404, a malformed one 400", async () => {
      const started = await post(scraper.url, "/crawl", { url: `${site.origin}/list/`, limit: 1, ignoreSitemap: true });
      const { status } = await finishedJob(started.body.url as string);
      expect(Date.parse(status.expiresAt) - now).toBe(TTL_MS);
      const finished = await fetch(`${scraper.url}/crawl/${started.body.id}`, { method: "DELETE" });
      expect(finished.status).toBe(409);
      expect(await finished.json()).toMatchObject({ success: false, code: "JOB_FINISHED" });
      // The same id is not a batch.
      expect((await getJson(`${scraper.url}/batch/scrape/${started.body.id}`)).status).toBe(404);
      now += TTL_MS + 1;
      const expired = await getJson(started.body.url as string);
      expect(expired.status).toBe(404);
      expect(expired.body).toMatchObject({ success: false, code: "JOB_NOT_FOUND" });
      expect((await getJson(`${scraper.url}/crawl/${randomUUID()}`)).status).toBe(404);
      expect((await getJson(`${scraper.url}/crawl/${randomUUID()}/errors`)).status).toBe(404);
      const malformed = await getJson(`${scraper.url}/crawl/not-an-id`);
      expect(malformed.status).toBe(400);
      expect(malformed.body).toMatchObject({ success: false, code: "BAD_REQUEST" });
    });
  });

  describe("DELETE /crawl/{id}", () => {
    it("stops the crawl: nothing is fetched after it, and /scrape kept a worker meanwhile", async () => {
      const started = await post(scraper.url, "/crawl", { url: `${site.origin}/held/`, ignoreSitemap: true });
      // Two background slots (WORKER_CONCURRENCY 3 - 1): two held pages in flight, the rest queued.
      await waitFor("two held pages", () => hitsUnder(site, "/held/").length >= 3);
      const scrape = await post(scraper.url, "/scrape", { url: `${site.origin}/free` });
      expect(scrape.status).toBe(200);
      expect((scrape.body.data as { metadata: { title: string } }).metadata.title).toBe("Free");

      const cancel = await fetch(`${scraper.url}/crawl/${started.body.id}`, { method: "DELETE" });
      expect(cancel.status).toBe(200);
      expect(await cancel.json()).toEqual({ success: true, status: "cancelled" });
      const fetchedAtCancel = hitsUnder(site, "/held/").length;
      expect(fetchedAtCancel).toBe(3);
      release();
      // Another scrape through the same scraper runs after anything the crawl could still have queued.
      expect((await post(scraper.url, "/scrape", { url: `${site.origin}/free` })).status).toBe(200);
      expect(hitsUnder(site, "/held/").length).toBe(fetchedAtCancel);
      const status = await getJson(started.body.url as string);
      expect(status.body.status).toBe("cancelled");
      // Cancelling again answers the same.
      expect((await fetch(`${scraper.url}/crawl/${started.body.id}`, { method: "DELETE" })).status).toBe(200);
    });
  });

  describe("POST /batch/scrape", () => {
    it("scrapes the URLs as a job, with formats, and lists failures under errors", async () => {
      const urls = [
        `${site.origin}/list/1`,
        `${site.origin}/list/2`,
        `${site.origin}/missing-page`,
        `${site.origin}/free`,
      ];
      const started = await post(scraper.url, "/batch/scrape", {
        urls: [...urls, "http://169.254.169.254/latest/meta-data/", "not a url"],
        ignoreInvalidURLs: true,
        formats: ["markdown", "links"],
      });
      expect(started.status).toBe(200);
      expect(started.body.url).toBe(`${scraper.url}/batch/scrape/${started.body.id}`);
      expect(started.body.invalidURLs).toEqual(["http://169.254.169.254/latest/meta-data/", "not a url"]);
      const { status, data } = await finishedJob(started.body.url as string);
      expect(status).toMatchObject({ status: "completed", total: 4, completed: 4, failed: 0 });
      expect(resultPaths(data)).toEqual(["/free", "/list/1", "/list/2", "/missing-page"]);
      const missing = data.find((d: { metadata: { statusCode: number } }) => d.metadata.statusCode === 404);
      expect(missing).toBeDefined();
      for (const page of data) expect(Object.keys(page).sort()).toEqual(["links", "markdown", "metadata"]);
      const errors = await getJson(`${scraper.url}/batch/scrape/${started.body.id}/errors`);
      expect(errors.body).toEqual({ success: true, errors: [], robotsBlocked: [] });
    });

    it("refuses an invalid URL unless told to leave it out, and records a page that fails", async () => {
      const refused = await post(scraper.url, "/batch/scrape", { urls: [`${site.origin}/free`, "ftp://x/"] });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ success: false, code: "BAD_URL" });
      const started = await post(scraper.url, "/batch/scrape", {
        urls: [`${site.origin}/free`, `http://127.0.0.1:${closedPort}/`, "http://127.0.0.1:1/"],
        ignoreInvalidURLs: true,
      });
      // Port 1 is not in the allow-list: refused before the job starts. The closed port is allowed, and fails.
      expect(started.body.invalidURLs).toEqual(["http://127.0.0.1:1/"]);
      const { status, data } = await finishedJob(started.body.url as string);
      expect(status).toMatchObject({ total: 2, completed: 2, failed: 1 });
      expect(resultPaths(data)).toEqual(["/free"]);
      const errors = await getJson(`${scraper.url}/batch/scrape/${started.body.id}/errors`);
      expect(errors.body.errors).toEqual([
        expect.objectContaining({ url: `http://127.0.0.1:${closedPort}/`, code: "UNREACHABLE" }),
      ]);
    });
  });
});
