// Crawl jobs shared by scraper replicas through a real Redis (REDIS_URL): two real scraper API
// processes (src/main.ts, SCRAPER_ROLE=api) behind one rendering service, one loopback site.
// A crawl started on one replica is served from either; the replica running it is killed
// (SIGKILL) mid-crawl and the crawl still ends with exactly the site's pages, none lost, none
// twice; a replica started afterwards serves the finished crawl from Redis. Crawl-delay holds per
// host across replicas and crawls.
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { buildRenderService, type RenderService, scraperConfig } from "@capstan/scraper";
import { createLogger } from "@capstan/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";
import { type RedisServer, startRedis } from "../ground/redis.ts";
import { type Json, post, type Site, startSite } from "./helpers.ts";

const MAIN = fileURLToPath(new URL("../../services/scraper/src/main.ts", import.meta.url));

let redis: RedisServer;
let render: RenderService;
let renderUrl: string;
let site: Site;
let slow: Site;
const running: ManagedProcess[] = [];
/** Every page path of `site`. */
const paths: string[] = [];
/** A page whose first request is held until the replica fetching it has been killed. */
const TRAP = "/s2/p3";
let trapHits = 0;
let releaseTrap: () => void = () => {};
const trapReleased = new Promise<void>((resolve) => {
  releaseTrap = resolve;
});

const html = (title: string, links: string[]) =>
  `<!DOCTYPE html><html><head><title>${title}</title></head><body><main><h1>${title}</h1><p>Text of ${title}.</p>` +
  links.map((l) => `<a href="${l}">${l}</a>`).join(" ") +
  "</main></body></html>";

/** 1 + 6 + 6×8 = 55 pages; every page links home and to its neighbours, so links repeat a lot. */
function buildSite(s: Site) {
  const add = (path: string, links: string[]) => {
    paths.push(path);
    // Each page answers after 150 ms; the trap page's first request waits until released.
    s.route(path, (_req, res) => {
      if (path === TRAP) trapHits++;
      const wait = path === TRAP && trapHits === 1 ? trapReleased : new Promise((r) => setTimeout(r, 150));
      void wait.then(() => {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        res.end(html(path, links));
      });
    });
  };
  add(
    "/",
    Array.from({ length: 6 }, (_, i) => `/s${i}/`),
  );
  for (let i = 0; i < 6; i++) {
    add(`/s${i}/`, ["/", ...Array.from({ length: 8 }, (_, j) => `/s${i}/p${j}`)]);
    for (let j = 0; j < 8; j++)
      add(`/s${i}/p${j}`, ["/", `/s${i}/`, `/s${i}/p${(j + 1) % 8}`, `/s${(i + 1) % 6}/p${j}`]);
  }
  s.route("/robots.txt", (_req, res) => {
    res.writeHead(404);
    res.end();
  });
}

async function startReplica(name: string, extra: Record<string, string> = {}) {
  const port = await freePort();
  const adminPort = await freePort();
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("CAPSTAN_")));
  const proc = startProcess(name, process.execPath, [MAIN], {
    ...clean,
    SCRAPER_ROLE: "api",
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    HOST: "127.0.0.1",
    RENDER_URL: renderUrl,
    REDIS_URL: redis.url,
    SCRAPER_ALLOWED_HOSTS: `127.0.0.1:${site.port},127.0.0.1:${slow.port}`,
    SCRAPER_JOB_LOCK_MS: "2000",
    WORKER_CONCURRENCY: "3",
    LOGGING_LEVEL: "warn",
    OTEL_SDK_DISABLED: "true",
    ...extra,
  });
  running.push(proc);
  const url = `http://127.0.0.1:${port}`;
  await waitFor("scraper listening", async () => (await fetch(`${url}/health`)).status === 200, {
    timeoutMs: 60_000,
    proc,
  });
  return { url, proc };
}

/** Polls `check` until true; a check that throws fails at once (waitFor would retry it). */
async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function statusOf(base: string, id: string, skip = 0): Promise<Json> {
  const res = await fetch(`${base}/crawl/${id}?skip=${skip}`);
  expect(res.status).toBe(200);
  return res.json();
}

/** All results of a finished crawl, following `next`, read from `base`. */
async function allResults(base: string, id: string): Promise<{ status: Json; urls: string[] }> {
  const first = await statusOf(base, id);
  const urls = first.data.map((p: Json) => new URL(p.metadata.sourceURL).pathname);
  let next: string | null = first.next;
  while (next) {
    const page = (await (await fetch(next.replace(/^http:\/\/[^/]+/, base))).json()) as Json;
    urls.push(...page.data.map((p: Json) => new URL(p.metadata.sourceURL).pathname));
    next = page.next;
  }
  return { status: first, urls };
}

/** When each page request of `slow` arrived and its answer was sent (performance.now). */
const slowVisits: { path: string; arrived: number; answered: number }[] = [];

/** `slow`: robots.txt asks for 1 s between requests; /a/ and /b/ each link to three pages. */
function buildSlowSite(s: Site) {
  for (const section of ["a", "b"]) {
    const pages = [0, 1, 2].map((i) => `/${section}/${i}`);
    for (const path of [`/${section}/`, ...pages]) {
      s.route(path, (_req, res) => {
        const arrived = performance.now();
        setTimeout(() => {
          res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
          res.end(html(path, path.endsWith("/") ? pages : []), () =>
            slowVisits.push({ path, arrived, answered: performance.now() }),
          );
        }, 50);
      });
    }
  }
  s.route("/robots.txt", (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("User-agent: *\nCrawl-delay: 1\n");
  });
}

beforeAll(async () => {
  redis = await startRedis();
  [site, slow] = await Promise.all([startSite(), startSite()]);
  buildSite(site);
  buildSlowSite(slow);
  const logger = createLogger({ name: "render", level: "silent" });
  const allowedHosts = [`127.0.0.1:${site.port}`, `127.0.0.1:${slow.port}`];
  render = buildRenderService(scraperConfig({ workerConcurrency: 4, allowedHosts }), { logger });
  await render.start({ warm: false });
  await render.app.listen({ port: 0, host: "127.0.0.1" });
  renderUrl = `http://127.0.0.1:${(render.app.server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
  await render?.close();
  await Promise.all([site?.close(), slow?.close()]);
  await redis?.stop();
});

describe("crawl jobs shared through Redis", () => {
  it("survive the replica running them being killed: exactly the site's pages, from either replica", async () => {
    // Only replica A runs when the crawl reaches the trap page: A is the one holding it.
    const a = await startReplica("scraper-a");
    const started = await post(a.url, "/crawl", { url: `${site.origin}/`, limit: 500, maxConcurrency: 4 });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const id = started.body.id as string;
    await until("A fetches the trap page", async () => trapHits > 0, 120_000);
    const b = await startReplica("scraper-b");
    // Either replica answers the status of a job the other started.
    const [fromA, fromB] = await Promise.all([statusOf(a.url, id), statusOf(b.url, id)]);
    expect(fromB.total).toBeGreaterThan(0);
    expect(fromA.status).toBe("scraping");
    expect(fromB.status).toBe("scraping");
    a.proc.child.kill("SIGKILL");
    releaseTrap(); // to a dead replica: its answer is never read
    await waitFor("the crawl ends", async () => (await statusOf(b.url, id)).status !== "scraping", {
      timeoutMs: 180_000,
    });
    const done = await allResults(b.url, id);
    expect(done.status.status).toBe("completed");
    expect(done.status.completed).toBe(paths.length);
    expect(done.status.failed).toBe(0);
    expect(done.urls.length).toBe(new Set(done.urls).size); // no page twice
    expect([...done.urls].sort()).toEqual([...paths].sort()); // no page lost
    expect(trapHits).toBe(2); // the page A died on was fetched again by B
    // A replica started after the crawl serves it from Redis, identically.
    const c = await startReplica("scraper-c");
    const again = await allResults(c.url, id);
    expect(again.urls).toEqual(done.urls);
    expect(again.status.completed).toBe(paths.length);
  }, 360_000);

  it("space a host's pages by its Crawl-delay across crawls and replicas", async () => {
    const [d, e] = await Promise.all([startReplica("scraper-d"), startReplica("scraper-e")]);
    // One crawl of each section of the same host, each started on another replica, each asking
    // for four pages at once: the host still gets one page at a time, a second apart.
    const started = await Promise.all([
      post(d.url, "/crawl", { url: `${slow.origin}/a/`, ignoreSitemap: true, maxConcurrency: 4 }),
      post(e.url, "/crawl", { url: `${slow.origin}/b/`, ignoreSitemap: true, maxConcurrency: 4 }),
    ]);
    for (const s of started) expect(s.status, JSON.stringify(s.body)).toBe(200);
    const ids = started.map((s) => s.body.id as string);
    await until(
      "both crawls end",
      async () => (await Promise.all(ids.map((id) => statusOf(d.url, id)))).every((st) => st.status !== "scraping"),
      120_000,
    );
    for (const [i, id] of ids.entries()) {
      const done = await allResults(e.url, id);
      expect(done.status.status).toBe("completed");
      const section = i === 0 ? "a" : "b";
      expect([...done.urls].sort()).toEqual([`/${section}/`, `/${section}/0`, `/${section}/1`, `/${section}/2`]);
    }
    const visits = [...slowVisits].sort((x, y) => x.arrived - y.arrived);
    expect(visits).toHaveLength(8);
    // Each request arrives at least the delay after the previous answer was sent (timers may run
    // a few ms early by the site's clock; never a whole delay).
    for (let i = 1; i < visits.length; i++) {
      const gap = (visits[i]?.arrived ?? 0) - (visits[i - 1]?.answered ?? 0);
      expect(gap, `${visits[i - 1]?.path} → ${visits[i]?.path}`).toBeGreaterThanOrEqual(950);
    }
  }, 180_000);

  it("answer 503 JOBS_UNAVAILABLE, not a hang, while Redis does not answer", async () => {
    const f = await startReplica("scraper-f");
    const unknown = "00000000-0000-4000-8000-000000000000";
    redis.freeze();
    try {
      const started = Date.now();
      const res = await fetch(`${f.url}/crawl/${unknown}`);
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("5");
      expect(await res.json()).toMatchObject({ success: false, code: "JOBS_UNAVAILABLE" });
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      redis.thaw();
    }
    await until("Redis answers again", async () => (await fetch(`${f.url}/crawl/${unknown}`)).status === 404, 30_000);
  }, 60_000);
});
