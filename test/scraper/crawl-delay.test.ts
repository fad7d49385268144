// robots.txt's Crawl-delay in POST /crawl, with the real Chromium on loopback sites whose page
// handlers record when each request arrives: the pages of a host are spaced by at least the delay
// its robots.txt gives the scraper's user agent, a hostile delay is capped (SCRAPER_CRAWL_DELAY_MAX,
// 3 s here), and a crawl whose pages cannot all be fetched at that pace within the job's fetching
// time says so, then stops with what it has instead of running into its expiry. Every assertion on
// time is a lower bound on the spacing (what a polite crawler promises), never a speed target.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { finishedJob, getJson } from "./crawl-site.ts";
import { post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

const MAX_DELAY_MS = 3_000;
const TTL_MS = 600_000;

let scraper: Scraper;
const sites: Site[] = [];
/** The jobs' clock runs this far ahead of the real one (moved to spend a job's fetching time). */
let offset = 0;

interface PacedSite {
  site: Site;
  /** When each page request arrived (performance.now), in order. */
  arrivals: number[];
  /** Paths held until the test lets them go. */
  hold: Map<string, Promise<void>>;
}

/** A site of `pages` pages linked from `/`, with that robots.txt. */
async function pacedSite(robots: string, pages: number): Promise<PacedSite> {
  const site = await startSite();
  sites.push(site);
  const paced: PacedSite = { site, arrivals: [], hold: new Map() };
  const html = (title: string, links: string[]) =>
    `<html><head><title>${title}</title></head><body><main><h1>${title}</h1>${links
      .map((l) => `<a href="${l}">${l}</a>`)
      .join(" ")}</main></body></html>`;
  const paths = ["/", ...Array.from({ length: pages - 1 }, (_, i) => `/p${i}`)];
  for (const path of paths) {
    site.route(path, (_req, res) => {
      paced.arrivals.push(performance.now());
      void (paced.hold.get(path) ?? Promise.resolve()).then(() => {
        res.writeHead(200, { "content-type": "text/html" });
        res.end(html(`Page ${path}`, path === "/" ? paths.slice(1) : []));
      });
    });
  }
  site.route("/robots.txt", (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(robots);
  });
  return paced;
}

/** A promise the test resolves itself. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Gaps between consecutive arrivals (ms). */
const gaps = (arrivals: number[]) => arrivals.slice(1).map((t, i) => t - (arrivals[i] as number));

async function waitFor(what: string, ok: () => boolean | Promise<boolean>, budgetMs = 60_000) {
  const deadline = Date.now() + budgetMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function startCrawl(body: Record<string, unknown>): Promise<string> {
  const started = await post(scraper.url, "/crawl", { ignoreSitemap: true, ...body });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return started.body.url as string;
}

let a: PacedSite;
let b: PacedSite;
let c: PacedSite;

beforeAll(async () => {
  // A: its own group asks 1 s; the `*` group's 20 s must not apply to the scraper.
  a = await pacedSite("User-agent: *\nCrawl-delay: 20\n\nUser-agent: CapstanScraper\nCrawl-delay: 1\nAllow: /\n", 5);
  // B: a day between requests.
  b = await pacedSite("User-agent: *\nCrawl-delay: 86400\n", 3);
  c = await pacedSite("User-agent: *\nCrawl-delay: 2\n", 11);
  scraper = await startScraper(
    {
      allowedHosts: sites.map((s) => `127.0.0.1:${s.port}`),
      // Two job pages at once: without pacing, two pages of a site would be fetched together.
      workerConcurrency: 3,
      jobs: { maxCrawlDelayMs: MAX_DELAY_MS, ttlMs: TTL_MS },
    },
    { now: () => Date.now() + offset },
  );
});

afterAll(async () => {
  await scraper?.close();
  await Promise.all(sites.map((s) => s.close()));
});

describe("Crawl-delay", () => {
  it("spaces the pages of a host by the delay its robots.txt gives the scraper's user agent", async () => {
    const { status, data } = await finishedJob(await startCrawl({ url: `${a.site.origin}/` }));
    expect(status.status).toBe("completed");
    expect(data).toHaveLength(5);
    expect(a.arrivals).toHaveLength(5);
    for (const gap of gaps(a.arrivals)) expect(gap).toBeGreaterThanOrEqual(1_000);
    // The scraper's own group applied (1 s), not the `*` group's 20 s (which the cap would report).
    expect(status.warning).toBeUndefined();
  });

  it("caps a hostile delay at SCRAPER_CRAWL_DELAY_MAX and says so", async () => {
    // A day between requests, uncapped, would hold the job far past this poll's budget.
    const { status, data } = await finishedJob(await startCrawl({ url: `${b.site.origin}/` }));
    expect(status.status).toBe("completed");
    expect(data).toHaveLength(3);
    for (const gap of gaps(b.arrivals)) expect(gap).toBeGreaterThanOrEqual(MAX_DELAY_MS);
    expect(status.warning).toContain(`robots.txt of ${b.site.origin} asks for 86400 s between requests`);
    expect(status.warning).toContain("3 s is applied");
    expect(status.warning).toContain("SCRAPER_CRAWL_DELAY_MAX");
  });

  it("a crawl that cannot finish at that pace in its fetching time says so, then stops with what it has", async () => {
    const home = gate();
    const first = gate();
    c.hold.set("/", home.promise);
    c.hold.set("/p0", first.promise);
    const statusUrl = await startCrawl({ url: `${c.site.origin}/` });
    await waitFor("the start page requested", () => c.arrivals.length === 1);
    // Spend the job's fetching time (SCRAPER_JOB_TTL less a tenth) but for 10 s.
    const { body } = await getJson(statusUrl);
    const fetchUntil = Date.parse(body.expiresAt) - TTL_MS / 10;
    offset = fetchUntil - 10_000 - Date.now();
    home.open();
    // The next page's turn comes 2 s after the start page: the 10 pages left need 18 s after it.
    await waitFor("the second page requested", () => c.arrivals.length === 2);
    const running = await getJson(statusUrl);
    expect(running.body.status).toBe("scraping");
    expect(running.body.warning).toMatch(/at 2 s between pages of 127\.0\.0\.1:\d+ \(robots\.txt Crawl-delay\)/);
    expect(running.body.warning).toContain("the 10 pages still to fetch (known so far) need at least 18 s");
    first.open();

    const { status, data } = await finishedJob(statusUrl);
    expect(status.status).toBe("completed");
    expect(status.warning).toContain("stopped before its limit");
    expect(status.warning).toContain(`robots.txt of ${c.site.origin} asks for 2 s between requests (Crawl-delay)`);
    expect(status.warning).not.toContain("known so far");
    expect(data.length).toBeGreaterThanOrEqual(2);
    expect(data.length).toBeLessThan(11);
    // Every request was a result: nothing was sent for a page after the job stopped.
    expect(c.arrivals).toHaveLength(data.length);
    for (const gap of gaps(c.arrivals)) expect(gap).toBeGreaterThanOrEqual(2_000);
  });
});
