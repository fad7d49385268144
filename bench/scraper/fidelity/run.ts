// Markdown fidelity benchmark: real documentation pages from Debian packages (installed by
// scripts/setup.d/55-scraper-bench.sh), served on loopback, scraped by the real scraper (API +
// rendering service + Chromium, default pageOptions) and converted by markdownify and html2text
// (PyPI, in the setup step's virtualenv) from the same HTML; each output scored against the
// page's own HTML (score.ts). Prints one table per site and the total, and fails (exit 1) when
// the scraper is below the better of the two on any measure.
//
// A page whose scrape fails is tried once more; if it fails again it is "lost": listed apart and
// left out of all three converters' scores alike (scoring its empty output for the scraper alone
// would measure the machine's load, not the conversion). More than 5 % of the pages lost fails
// the run: the comparison would then stand on too few pages. Before any figure, the run checks its
// work: every site has pages, every scored page has a non-empty output from each converter and
// expected items (headings, links) from its own HTML, so a site whose main-content selector no
// longer matches cannot score 100 % on nothing.
//
//   node bench/scraper/fidelity/run.ts [--per-site 70] [--out /tmp/fidelity.json] [--misses /tmp/misses.json]
//   node bench/scraper/fidelity/run.ts --from /tmp/fidelity.json   # score saved outputs again
//   node bench/scraper/fidelity/run.ts --smoke                     # 2 pages per site
//
// --misses writes, per page and converter, the expected items each measure did not find.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { homedir } from "node:os";
import { extname, join } from "node:path";
import { buildApp, buildRenderService, scraperConfig } from "@capstan/scraper";
import { createLogger, createRegistry } from "@capstan/shared";
import { expectAtLeast, expectWork, sized, workChecked } from "../../work.ts";
import { add, empty, MEASURES, type Misses, type Score, type Site, score, truthOf } from "./score.ts";

const args = new Map<string, string>();
const argv = process.argv.slice(2).filter((a) => a !== "--smoke");
for (let i = 0; i < argv.length; i += 2) args.set(argv[i] ?? "", argv[i + 1] ?? "");
const PER_SITE = Number(args.get("--per-site") ?? sized(70, 2));
const VENV = join(process.env.CAPSTAN_CACHE ?? join(homedir(), ".cache/capstan"), "scraper-bench/venv");

interface SiteSource extends Site {
  /** Folder served under /<name>/, and the pages of it that are scored. */
  root: string;
  pages: (root: string) => string[];
}

const html = (dir: string) => (root: string) =>
  readdirSync(join(root, dir))
    .filter((f) => f.endsWith(".html"))
    .sort()
    .map((f) => join(dir, f));

const SITES: SiteSource[] = [
  {
    name: "python",
    root: "/usr/share/doc/python3.11-doc/html",
    pages: html("library"),
    main: 'div[role="main"]',
    chrome: "div.related, div.sphinxsidebar, div.footer",
  },
  {
    name: "postgresql",
    root: "/usr/share/doc/postgresql-doc-15/html",
    pages: html("."),
    main: "body",
    notMain: ".navheader, .navfooter",
    chrome: ".navheader, .navfooter",
  },
  {
    name: "rustdoc",
    root: "/usr/share/doc/cargo/doc",
    pages: (root) => html("syn")(root).filter((f) => !/(^|\/)all\.html$/.test(f)),
    main: "#main-content",
    chrome: "nav.sidebar, nav.sub",
  },
  {
    name: "debian-reference",
    root: "/usr/share/doc/debian-reference-en/docs",
    pages: (root) => html(".")(root).filter((f) => f.endsWith(".en.html")),
    main: "body",
    notMain: ".navheader, .navfooter",
    chrome: ".navheader, .navfooter",
  },
];

const missing = SITES.filter((s) => !existsSync(s.root)).map((s) => s.root);
if (missing.length || !existsSync(join(VENV, "bin/python"))) {
  console.error(
    `[fidelity] missing ${[...missing, ...(existsSync(join(VENV, "bin/python")) ? [] : [VENV])].join(", ")}:\n` +
      "  run `bash scripts/setup.d/55-scraper-bench.sh` (Debian documentation packages, markdownify and html2text)",
  );
  process.exit(2);
}

/** Evenly spaced pages of a site, at most PER_SITE. */
function pick(list: string[]): string[] {
  if (list.length <= PER_SITE) return list;
  return Array.from({ length: PER_SITE }, (_, i) => list[Math.floor((i * list.length) / PER_SITE)] as string);
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css",
  ".js": "text/javascript",
  ".png": "image/png",
  ".svg": "image/svg+xml",
};
const server = createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
  const [, name, ...rest] = path.split("/");
  const site = SITES.find((s) => s.name === name);
  const file = site ? join(site.root, ...rest) : "";
  if (!site || file.includes("..") || !existsSync(file)) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
  res.end(readFileSync(file));
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const pages = SITES.flatMap((site) => {
  const found = site.pages(site.root);
  expectAtLeast(`pages of ${site.name} found in ${site.root}`, found.length, 1);
  return pick(found).map((rel) => ({
    site,
    file: join(site.root, rel),
    url: `${origin}/${site.name}/${rel.replace(/^\.\//, "")}`,
  }));
});
console.log(
  `[fidelity] ${pages.length} pages: ${SITES.map((s) => `${s.name} ${pages.filter((p) => p.site === s).length}`).join(", ")}`,
);

/** Outputs of an earlier run (--out), scored again without converting: matched by URL path. A lost page has `lost`. */
const saved = args.has("--from")
  ? (JSON.parse(readFileSync(args.get("--from") as string, "utf8")) as Record<string, Record<string, string>>)
  : undefined;
function savedFor(url: string): Record<string, string> | undefined {
  const entry = saved && Object.entries(saved).find(([k]) => new URL(k).pathname === new URL(url).pathname);
  if (!entry) return undefined;
  // Links were made absolute against that run's loopback origin.
  const before = new URL(entry[0]).origin;
  return Object.fromEntries(Object.entries(entry[1]).map(([c, md]) => [c, md.replaceAll(before, origin)]));
}

const others = (
  saved
    ? {}
    : JSON.parse(
        execFileSync(join(VENV, "bin/python"), [join(import.meta.dirname, "convert.py")], {
          input: JSON.stringify(pages.map((p) => ({ file: p.file, url: p.url }))),
          maxBuffer: 1 << 30,
        }).toString(),
      )
) as Record<string, { markdownify: string; html2text: string }>;

const logger = createLogger({ name: "fidelity", level: "warn" });
const config = scraperConfig({
  workerConcurrency: 2,
  allowedHosts: [`127.0.0.1:${(server.address() as AddressInfo).port}`],
});
const render = buildRenderService(config, { logger, registry: createRegistry({ defaultMetrics: false }) });
if (!saved) await render.start();
await render.app.listen({ port: 0, host: "127.0.0.1" });
const renderUrl = `http://127.0.0.1:${(render.app.server.address() as AddressInfo).port}`;
const app = buildApp({ ...config, renderUrl }, { logger, registry: createRegistry({ defaultMetrics: false }) });
await app.listen({ port: 0, host: "127.0.0.1" });
const apiUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

const CONVERTERS = ["scraper", "markdownify", "html2text"] as const;
type Converter = (typeof CONVERTERS)[number];
const totals = new Map<string, Record<Converter, Score>>();
const outputs: Record<string, Record<Converter, string> | { lost: string }> = {};
const misses: Record<string, Partial<Record<Converter, Misses>>> = {};
const lost: { url: string; error: string }[] = [];
const started = Date.now();

/** The scraper's Markdown of a page, or the error of its scrape. */
async function scrape(url: string): Promise<{ markdown: string } | { error: string }> {
  try {
    const res = await fetch(`${apiUrl}/scrape`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url }),
    });
    const body = (await res.json()) as {
      success: boolean;
      data?: { markdown: string; metadata?: { statusCode?: number } };
      error?: string;
    };
    const status = body.data?.metadata?.statusCode;
    if (!body.success || !body.data) return { error: `${res.status} ${body.error}` };
    // The page itself, not the site's error page: a 404 answered as Markdown is not a conversion.
    return status === 200 ? { markdown: body.data.markdown } : { error: `the page answered ${status}` };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** Tried twice; the second failure makes the page lost. */
async function scrapeWithRetry(url: string): Promise<{ markdown: string } | { error: string }> {
  const first = await scrape(url);
  if (!("error" in first)) return first;
  console.error(`[fidelity] scrape failed, trying once more: ${url}: ${first.error}`);
  // A moment for the rendering service to replace a crashed browser or page.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  return scrape(url);
}

let next = 0;
async function worker() {
  for (let i = next++; i < pages.length; i = next++) {
    const page = pages[i] as (typeof pages)[number];
    const previous = savedFor(page.url);
    const result = previous
      ? previous.lost !== undefined
        ? { error: previous.lost }
        : { markdown: previous.scraper ?? "" }
      : await scrapeWithRetry(page.url);
    if ("error" in result) {
      lost.push({ url: page.url, error: result.error });
      outputs[page.url] = { lost: result.error };
      continue;
    }
    const md: Record<Converter, string> = {
      scraper: result.markdown,
      markdownify: previous?.markdownify ?? others[page.url]?.markdownify ?? "",
      html2text: previous?.html2text ?? others[page.url]?.html2text ?? "",
    };
    outputs[page.url] = md;
    const truth = truthOf(readFileSync(page.file, "utf8"), page.url, page.site);
    const site = totals.get(page.site.name) ?? { scraper: empty(), markdownify: empty(), html2text: empty() };
    for (const c of CONVERTERS) {
      const missed: Misses = {};
      site[c] = add(site[c], score(md[c], page.url, truth, missed));
      if (Object.keys(missed).length) misses[page.url] = { ...misses[page.url], [c]: missed };
    }
    totals.set(page.site.name, site);
  }
}
await Promise.all([worker(), worker()]);
await app.close();
await render.close();
server.close();

// The work, before any figure: few pages lost, every site scored on expected items, every output non-empty.
const scored = pages.length - lost.length;
if (lost.length) {
  console.log(`\n[fidelity] ${lost.length} pages lost (failed twice), left out of all three converters' scores:`);
  for (const l of lost) console.log(`  ${l.url}: ${l.error}`);
}
expectWork(
  lost.length <= 0.05 * pages.length,
  `pages scraped: ${lost.length} of ${pages.length} lost, more than 5 % (first: ${lost[0]?.url}: ${lost[0]?.error})`,
);
for (const site of SITES) {
  const s = totals.get(site.name);
  expectWork(s !== undefined, `scored pages of ${site.name}: none`);
  expectAtLeast(
    `headings expected from the pages of ${site.name} (its main region ${site.main})`,
    s.scraper.headings.of,
    1,
  );
  expectAtLeast(`links expected from the pages of ${site.name} (its main region ${site.main})`, s.scraper.links.of, 1);
}
for (const [url, out] of Object.entries(outputs)) {
  if ("lost" in out) continue;
  const blank = CONVERTERS.filter((c) => !out[c].trim());
  expectWork(blank.length === 0, `non-empty Markdown of ${url} from every converter (empty: ${blank.join(", ")})`);
}

const pct = (s: { hit: number; of: number }) => (s.of === 0 ? 1 : s.hit / s.of);
const fmt = (s: { hit: number; of: number }) => (s.of === 0 ? "n/a" : `${(100 * pct(s)).toFixed(1)}%`);
function table(title: string, scores: Record<Converter, Score>) {
  console.log(`\n${title}\n| measure | n | scraper | markdownify | html2text |\n|---|---|---|---|---|`);
  for (const m of MEASURES) {
    const n = Math.max(...CONVERTERS.map((c) => scores[c][m].of));
    console.log(`| ${m} | ${n} | ${CONVERTERS.map((c) => fmt(scores[c][m])).join(" | ")} |`);
  }
}
const all = { scraper: empty(), markdownify: empty(), html2text: empty() };
for (const [name, s] of totals) {
  table(name, s);
  for (const c of CONVERTERS) all[c] = add(all[c], s[c]);
}
table(
  `all ${scored} scored pages of ${pages.length} (${lost.length} lost, ${((Date.now() - started) / 1000).toFixed(0)} s)`,
  all,
);
if (args.has("--out")) writeFileSync(args.get("--out") as string, JSON.stringify(outputs));
if (args.has("--misses")) {
  writeFileSync(args.get("--misses") as string, JSON.stringify(misses, null, 1));
  console.log(`\n[fidelity] missed items per page and converter in ${args.get("--misses")}; scraper's per measure:`);
  for (const m of MEASURES) {
    const n = Object.values(misses).reduce((sum, p) => sum + (p.scraper?.[m]?.length ?? 0), 0);
    if (n) console.log(`  ${m}: ${n}`);
  }
}
const behind = MEASURES.filter((m) => pct(all.scraper[m]) < Math.max(pct(all.markdownify[m]), pct(all.html2text[m])));
if (behind.length) {
  console.log(`\n[fidelity] scraper below the better of markdownify and html2text on: ${behind.join(", ")}`);
  process.exit(1);
}
console.log("\n[fidelity] scraper at least as good as the better of markdownify and html2text on every measure");
workChecked(
  `${scored} pages of ${pages.length} scored (${SITES.map((s) => s.name).join(", ")}), ` +
    "each with non-empty Markdown from the scraper, markdownify and html2text",
);
