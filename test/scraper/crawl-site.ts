// A generated site of 868 pages for the crawl tests, served on loopback by the test's own server
// (helpers.startSite, which counts every request by path):
//   /                      links to /docs/, /blog/, /private/, /ext/
//   /docs/                 links to the ten sections /docs/a0/ … /docs/a9/
//   /docs/aI/              links to its forty pages /docs/aI/p0 … /docs/aI/p39
//   /docs/aI/pJ            links to its section, the next page and /docs/aI/pJ/notes
//   /docs/aI/pJ/notes      a leaf (three path segments below /docs/)
//   /blog/, /blog/post0…39 the blog; /private/ and /private/x0…9 (disallowed by robots.txt)
//   /hidden/orphan0…1      linked from nowhere, listed only in the sitemap
//   /ext/                  links to /ext/a, to `offsite` (allowed by the guard, another site) and
//                          to `blocked` (refused by the guard)
// robots.txt disallows /private/ and names a sitemap index, which names a gzipped sitemap and a
// plain one; together they list every page.
import { gzipSync } from "node:zlib";
import type { Site } from "./helpers.ts";

const page = (title: string, links: string[], body = "") =>
  `<!DOCTYPE html><html><head><title>${title}</title><script>window.x = 1;</script></head><body>` +
  `<nav><a href="/">Home</a></nav><main><h1>${title}</h1><p>${body || `Text of ${title}.`}</p><ul>` +
  links.map((href) => `<li><a href="${href}">${href}</a></li>`).join("") +
  `</ul></main><footer>Footer of ${title}</footer></body></html>`;

export interface CrawlSite {
  /** Every page path of the site (868). */
  paths: string[];
}

export function buildCrawlSite(site: Site, offsite: string, blocked: string): CrawlSite {
  const paths: string[] = [];
  const add = (path: string, title: string, links: string[]) => {
    paths.push(path);
    site.route(path, page(title, links));
  };
  add("/", "Home", ["/docs/", "/blog/", "/private/", "/ext/", "#top"]);
  add(
    "/docs/",
    "Docs",
    Array.from({ length: 10 }, (_, i) => `/docs/a${i}/`),
  );
  for (let i = 0; i < 10; i++) {
    add(
      `/docs/a${i}/`,
      `Section ${i}`,
      Array.from({ length: 40 }, (_, j) => `/docs/a${i}/p${j}`),
    );
    for (let j = 0; j < 40; j++) {
      const next = j < 39 ? [`/docs/a${i}/p${j + 1}`] : [];
      add(`/docs/a${i}/p${j}`, `Page ${i}.${j}`, [`/docs/a${i}/`, ...next, `/docs/a${i}/p${j}/notes#n`]);
      add(`/docs/a${i}/p${j}/notes`, `Notes ${i}.${j}`, []);
    }
  }
  add(
    "/blog/",
    "Blog",
    Array.from({ length: 40 }, (_, j) => `/blog/post${j}`),
  );
  for (let j = 0; j < 40; j++) add(`/blog/post${j}`, `Post ${j}`, ["/blog/"]);
  add(
    "/private/",
    "Private",
    Array.from({ length: 10 }, (_, j) => `/private/x${j}`),
  );
  for (let j = 0; j < 10; j++) add(`/private/x${j}`, `Private ${j}`, []);
  add("/hidden/orphan0", "Orphan 0", []);
  add("/hidden/orphan1", "Orphan 1", []);
  add("/ext/", "External links", ["/ext/a", `${offsite}/`, `${blocked}/`, "mailto:someone@example.org"]);
  add("/ext/a", "Ext A", []);

  site.route("/robots.txt", (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(`User-agent: *\nDisallow: /private/\n\nSitemap: ${site.origin}/sitemap-index.xml\n`);
  });
  const urlset = (list: string[]) =>
    `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
    list.map((p) => `<url><loc>${site.origin}${p}</loc></url>`).join("") +
    "</urlset>";
  const half = Math.ceil(paths.length / 2);
  site.route("/sitemap-index.xml", (_req, res) => {
    res.writeHead(200, { "content-type": "application/xml" });
    res.end(
      `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
        `<sitemap><loc>${site.origin}/sitemap-1.xml.gz</loc></sitemap>` +
        `<sitemap><loc>${site.origin}/sitemap-2.xml</loc></sitemap></sitemapindex>`,
    );
  });
  site.route("/sitemap-1.xml.gz", (_req, res) => {
    res.writeHead(200, { "content-type": "application/gzip" });
    res.end(gzipSync(urlset(paths.slice(0, half))));
  });
  site.route("/sitemap-2.xml", (_req, res) => {
    res.writeHead(200, { "content-type": "application/xml" });
    res.end(urlset(paths.slice(half)));
  });
  return { paths };
}

/** The paths of a job's results (metadata.sourceURL), sorted. */
export function resultPaths(data: { metadata: { sourceURL: string } }[]): string[] {
  return data.map((d) => new URL(d.metadata.sourceURL).pathname).sort();
}

/** Requests the site received for paths starting with `prefix`. */
export function hitsUnder(site: Site, prefix: string): string[] {
  return site.hits.filter((h) => h.startsWith(prefix));
}

// biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies loosely
type Json = any;

export async function getJson(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Json }> {
  const res = await fetch(url, { headers });
  return { status: res.status, body: await res.json() };
}

/**
 * Polls a job until it is no longer scraping (a bounded loop, not a timing assertion), then
 * reads every page of its results by following `next`. Returns the last status and all pages.
 */
export async function finishedJob(statusUrl: string, budgetMs = 90_000): Promise<{ status: Json; data: Json[] }> {
  const deadline = Date.now() + budgetMs;
  let first = await getJson(statusUrl);
  while (first.body.status === "scraping" && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    first = await getJson(statusUrl);
  }
  const data: Json[] = [...first.body.data];
  let next: string | null = first.body.next;
  while (next) {
    const page = await getJson(next);
    data.push(...page.body.data);
    next = page.body.next;
  }
  return { status: first.body, data };
}
