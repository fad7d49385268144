// Scraper benchmark: pages per second through the whole path (API → rendering service →
// Chromium → markdown) on loopback pages at concurrency 1, 4 and 8, then RSS of the process
// tree (Node + Chromium) over a long run. Each level is compared with a plain HTTP fetch of the
// same pages in the same run. Bounded in count and time; prints its figures. Every scrape must
// answer the page asked for, rendered (its title, its heading and the paragraph its script adds),
// and every level must scrape the number of pages asked for, before its figure is printed.
//
//   node bench/scraper/bench.ts [--pages 2000] [--per-level 200] [--max-seconds 1200] [--recycle 25]
//   node bench/scraper/bench.ts --smoke     (a few pages per level, 100 in the RSS run)
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { buildApp, buildRenderService, scraperConfig } from "@capstan/scraper";
import { createLogger, createRegistry } from "@capstan/shared";
import { Agent, fetch } from "undici";
import { processTree, pssMiB } from "../process-tree.ts";
import { expectCount, expectWork, sized, workChecked } from "../work.ts";

const args = new Map<string, string>();
const argv = process.argv.slice(2).filter((a) => a !== "--smoke");
for (let i = 0; i < argv.length; i += 2) args.set(argv[i] ?? "", argv[i + 1] ?? "");
const RSS_PAGES = Number(args.get("--pages") ?? sized(2000, 100));
/** Bounds the RSS run; the throughput runs are bounded by --per-level. */
const MAX_SECONDS = Number(args.get("--max-seconds") ?? 1200);
const PER_LEVEL = Number(args.get("--per-level") ?? sized(200, 8));
const WARM_UP = sized(40, 4);
/** Scrapes per pooled page before it is replaced (the scraper's pageRecycleAfter; its default when absent). */
const RECYCLE = args.has("--recycle") ? { pageRecycleAfter: Number(args.get("--recycle")) } : {};

function page(i: number): string {
  const rows = Array.from({ length: 10 }, (_, r) => `<tr><td>row ${r}</td><td>${(i * r) % 97}</td></tr>`).join("");
  const paras = Array.from(
    { length: 12 },
    (_, p) =>
      `<p>Paragraph ${p} of page ${i}: <a href="/p/${(i + p) % 500}">related ${p}</a> with <strong>bold</strong> text.</p>`,
  ).join("");
  return `<!doctype html><html lang="en"><head><title>Bench page ${i}</title>
    <meta name="description" content="Benchmark page ${i}"><meta property="og:title" content="Bench ${i}">
    <link rel="stylesheet" href="/style.css"></head>
    <body><nav><a href="/">Home</a></nav><main><h1>Page ${i}</h1>${paras}
    <table><thead><tr><th>Name</th><th>Value</th></tr></thead><tbody>${rows}</tbody></table></main>
    <script>document.querySelector("main").insertAdjacentHTML("beforeend", "<p>script ${i}</p>");</script>
    <footer>footer</footer></body></html>`;
}

/**
 * Memory in MiB of this process and every descendant (the Chromium processes): the sum of PSS
 * (proportional set size), so pages shared between Chromium's processes count once.
 */
function treeRssMiB(): number {
  return pssMiB(processTree());
}

/**
 * CPU time in ms used so far by this Node process (API, rendering service, this client and the
 * site) and by Chromium (every descendant, with the children it has reaped).
 */
function treeCpuMs(): { node: number; chromium: number } {
  const tick = 10; // USER_HZ is 100 on Linux
  let node = 0;
  let chromium = 0;
  for (const pid of processTree()) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const ms = (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * tick;
      if (pid === process.pid) node += ms;
      else chromium += ms;
    } catch {
      // process gone
    }
  }
  return { node, chromium };
}

const site = createServer((req, res) => {
  if (req.url === "/style.css") {
    res.writeHead(200, { "content-type": "text/css" });
    res.end("body{font-family:sans-serif} table{border-collapse:collapse}");
    return;
  }
  const m = /^\/p\/(\d+)$/.exec(req.url ?? "");
  if (!m) {
    res.writeHead(404, { "content-type": "text/html" }).end("<title>Not found</title><h1>Not found</h1>");
    return;
  }
  const i = Number(m[1]);
  res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
  res.end(page(i));
});
await new Promise<void>((r) => site.listen(0, "127.0.0.1", r));
const sitePort = (site.address() as AddressInfo).port;

const logger = createLogger({ name: "scraper-bench", level: "warn" });
const config = scraperConfig({
  workerConcurrency: 8,
  ...RECYCLE,
  maxConcurrentRequests: 64,
  allowedHosts: [`127.0.0.1:${sitePort}`],
  logLevel: "warn",
});
const render = buildRenderService(config, { logger, registry: createRegistry({ defaultMetrics: false }) });
await render.start();
await render.app.listen({ port: 0, host: "127.0.0.1" });
const renderUrl = `http://127.0.0.1:${(render.app.server.address() as AddressInfo).port}`;
const app = buildApp({ ...config, renderUrl }, { logger, registry: createRegistry({ defaultMetrics: false }) });
await app.listen({ port: 0, host: "127.0.0.1" });
const api = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
const agent = new Agent({ connections: 16 });
let deadline = Number.POSITIVE_INFINITY;

let counter = 0;
/** Scrapes and fetches that did not answer their page, and what the first of them answered. */
let failures = 0;
let firstFailure = "";
function failed(what: string): void {
  failures++;
  firstFailure ||= what.slice(0, 300);
}

async function scrapeOne(): Promise<void> {
  const i = counter++ % 500;
  const url = `http://127.0.0.1:${sitePort}/p/${i}`;
  const res = await fetch(`${api}/scrape`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ url }),
    dispatcher: agent,
  });
  const text = await res.text();
  const body = JSON.parse(text) as {
    success: boolean;
    data?: { markdown?: string; metadata?: { title?: string; statusCode?: number } };
  };
  const md = body.data?.markdown ?? "";
  // The page asked for, rendered: its title, its heading, and the paragraph its script adds.
  const rendered =
    body.success &&
    body.data?.metadata?.statusCode === 200 &&
    body.data.metadata.title === `Bench page ${i}` &&
    md.includes(`# Page ${i}`) &&
    md.includes(`script ${i}`);
  if (!rendered) failed(`scrape of ${url}: ${res.status} ${text}`);
}

/** Baseline: the same page fetched over plain HTTP, no scraper, no browser. */
async function fetchOne(): Promise<void> {
  const i = counter++ % 500;
  const url = `http://127.0.0.1:${sitePort}/p/${i}`;
  const res = await fetch(url, { dispatcher: agent });
  const text = await res.text();
  if (res.status !== 200 || !text.includes(`<title>Bench page ${i}</title>`)) failed(`fetch of ${url}: ${res.status}`);
}

/** Stops the run unless every scrape and fetch so far answered its page, and `done` of `asked` were done. */
function expectPages(what: string, done: number, asked: number): void {
  expectWork(failures === 0, `every page answered with its content (${failures} did not; first: ${firstFailure})`);
  expectCount(what, done, asked);
}

/** Pages per second at `concurrency`, and how many pages were done (fewer than asked at the deadline). */
async function run(
  concurrency: number,
  pages: number,
  onProgress?: (done: number) => void,
  one: () => Promise<void> = scrapeOne,
): Promise<{ rate: number; done: number }> {
  let done = 0;
  let started = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (started < pages && Date.now() < deadline) {
        started++;
        await one();
        done++;
        onProgress?.(done);
      }
    }),
  );
  return { rate: done / ((performance.now() - t0) / 1000), done };
}

console.log(
  `scraper bench: node ${process.version}, ${config.workerConcurrency} pages in the pool, each replaced after ` +
    `${config.pageRecycleAfter} scrapes, loopback site`,
);
expectPages("warm-up pages scraped", (await run(4, WARM_UP)).done, WARM_UP);
const rates: Record<number, number> = {};
/** Share of the machine's CPU time the hypervisor gave to others (steal), from /proc/stat. */
function cpuTimes(): number[] {
  return (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").split(/\s+/).slice(1).map(Number);
}
const stealPct = (a: number[], b: number[]) => {
  const d = b.map((v, i) => v - (a[i] ?? 0));
  return (
    (100 * (d[7] ?? 0)) /
    Math.max(
      1,
      d.slice(0, 8).reduce((x, y) => x + y, 0),
    )
  );
};

for (const c of [1, 4, 8]) {
  const stat0 = cpuTimes();
  const cpu0 = treeCpuMs();
  const scraped = await run(c, PER_LEVEL);
  rates[c] = scraped.rate;
  const cpu1 = treeCpuMs();
  const steal = stealPct(stat0, cpuTimes());
  const perPage = (k: "node" | "chromium") => ((cpu1[k] - cpu0[k]) / PER_LEVEL).toFixed(0);
  const baseline = await run(c, PER_LEVEL, undefined, fetchOne);
  expectPages(`pages scraped at concurrency ${c}`, scraped.done, PER_LEVEL);
  expectPages(`pages fetched at concurrency ${c}`, baseline.done, PER_LEVEL);
  console.log(
    `concurrency ${c}: ${rates[c]?.toFixed(1)} pages/s (${PER_LEVEL} pages); CPU per page: ` +
      `Chromium ${perPage("chromium")} ms, Node ${perPage("node")} ms; plain HTTP fetch of the same ` +
      `pages ${baseline.rate.toFixed(0)} pages/s (scrape/fetch ${((rates[c] ?? 0) / baseline.rate).toFixed(3)}); ` +
      `CPU stolen by the hypervisor ${steal.toFixed(1)} %`,
  );
}

/**
 * RSS over a long run. Sampled every 20 pages; each reported point is the mean of the five
 * samples of its 100-page window, so one instant of the saw-tooth (a replaced page's renderer
 * exiting while its successor starts) does not stand for the level. The raw extremes are printed
 * too. "After warm-up" starts at 500 pages (at a quarter of a shorter run).
 */
async function memoryRun(pages: number): Promise<number> {
  const raw: number[] = [];
  const samples: { pages: number; rss: number }[] = [{ pages: 0, rss: treeRssMiB() }];
  deadline = Date.now() + MAX_SECONDS * 1000;
  const t0 = performance.now();
  const { rate, done } = await run(8, pages, (done) => {
    if (done % 20 !== 0) return;
    raw.push(treeRssMiB());
    if (done % 100 === 0) samples.push({ pages: done, rss: raw.slice(-5).reduce((x, y) => x + y, 0) / 5 });
  });
  const elapsed = (performance.now() - t0) / 1000;
  const stopped = Date.now() >= deadline;
  // Stopped by --max-seconds, the run reports the pages it reached, but at least one 100-page sample.
  expectPages("pages scraped in the RSS run", done, stopped ? Math.max(100, done) : pages);
  const warm = samples.find((s) => s.pages >= Math.min(500, pages / 4)) ?? samples[0];
  const last = samples.at(-1) ?? samples[0];
  const after = samples.filter((s) => s.pages >= (warm?.pages ?? 0));
  const mean = after.reduce((a, s) => a + s.rss, 0) / Math.max(1, after.length);
  const pct = (v: number) => `${v >= mean ? "+" : "−"}${Math.abs((v / mean - 1) * 100).toFixed(1)} %`;
  // Least-squares slope after warm-up: growth, as opposed to the saw-tooth of pages being replaced.
  const xMean = after.reduce((a, s) => a + s.pages, 0) / Math.max(1, after.length);
  const covariance = after.reduce((a, s) => a + (s.pages - xMean) * (s.rss - mean), 0);
  const slope =
    covariance /
    Math.max(
      1,
      after.reduce((a, s) => a + (s.pages - xMean) ** 2, 0),
    );
  const rss = after.map((s) => s.rss);
  console.log(
    `RSS run: ${last?.pages} pages in ${elapsed.toFixed(0)} s (${rate.toFixed(1)} pages/s at concurrency 8)` +
      `${stopped ? " — stopped by --max-seconds" : ""}`,
  );
  console.log(
    `RSS (PSS of Node + Chromium processes): start ${samples[0]?.rss.toFixed(0)} MiB; after warm-up ` +
      `(${warm?.pages} pages on) mean ${mean.toFixed(0)} MiB, range ${pct(Math.min(...rss))} / ` +
      `${pct(Math.max(...rss))} of the mean, end ${pct(last?.rss ?? mean)}, trend ` +
      `${(slope * 1000).toFixed(1)} MiB per 1,000 pages (100-page means; single samples ` +
      `${Math.min(...raw).toFixed(0)}–${Math.max(...raw).toFixed(0)} MiB)`,
  );
  console.log(`RSS samples (pages:MiB): ${samples.map((s) => `${s.pages}:${s.rss.toFixed(0)}`).join(" ")}`);
  return done;
}

const rssDone = RSS_PAGES >= 100 ? await memoryRun(RSS_PAGES) : 0;
if (!rssDone) console.log("RSS run skipped (--pages below 100)");

await app.close();
await render.close();
await agent.close();
site.close();
workChecked(
  `${WARM_UP + 3 * PER_LEVEL + rssDone} pages scraped and ${3 * PER_LEVEL} fetched, each with its title, ` +
    "heading and scripted paragraph",
);
process.exit(0);
