// The generated loopback site bench/knowledge/bench.ts crawls: an index page linking to sections
// of 200 pages each, each section linking to its pages, so a crawl from the index reaches every
// page two links down. The links sit in <nav>, which the scraper drops from a page's Markdown
// (onlyMainContent), so each page's document is its own short text: one chunk. Each page's text
// carries a version; change() rewrites chosen pages, as a site that changed between two refreshes.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

const PER_SECTION = 200;

export interface Site {
  origin: string;
  /** host:port, for the scraper's allowed hosts. */
  host: string;
  /** The start URL of the crawl. */
  start: string;
  /** Leaf pages, sections, and every page a crawl finds (index + sections + leaves). */
  pages: number;
  sections: number;
  total: number;
  /** Requests answered with a page, by path class. */
  served: { leaves: number; other: number };
  /** The distinctive text of leaf page i (at its current version). */
  textOf(i: number): string;
  /** Rewrites leaf pages `which` (their version goes up by one). */
  change(which: number[]): void;
  close(): Promise<void>;
}

const html = (title: string, body: string, links: string[]) =>
  `<!DOCTYPE html><html><head><title>${title}</title></head><body><nav>` +
  links.map((l) => `<a href="${l}">${l}</a>`).join(" ") +
  `</nav><main><h1>${title}</h1><p>${body}</p></main></body></html>`;

/** Serves a site of `pages` leaf pages on 127.0.0.1 (a free port). */
export async function startSite(pages: number): Promise<Site> {
  const sections = Math.ceil(pages / PER_SECTION);
  const versions = new Uint16Array(pages).fill(1);
  const served = { leaves: 0, other: 0 };
  const textOf = (i: number) =>
    `Page ${i} (version ${versions[i]}) explains how telescope number ${i} of the observatory is aligned, ` +
    `cleaned and stored; its mirror code is M${(i * 7919) % 100_003}-v${versions[i]}.`;
  const leavesOf = (s: number) =>
    Array.from({ length: Math.min(PER_SECTION, pages - s * PER_SECTION) }, (_, k) => s * PER_SECTION + k);
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] as string;
    const leaf = /^\/docs\/s(\d+)\/p(\d+)$/.exec(path);
    const section = /^\/docs\/s(\d+)\/$/.exec(path);
    let body: string | undefined;
    if (path === "/docs/") {
      body = html(
        "Index",
        "The observatory handbook.",
        Array.from({ length: sections }, (_, s) => `/docs/s${s}/`),
      );
    } else if (section && Number(section[1]) < sections) {
      const s = Number(section[1]);
      body = html(
        `Section ${s}`,
        `Section ${s} of the handbook.`,
        leavesOf(s).map((i) => `/docs/s${s}/p${i}`),
      );
    } else if (leaf && Number(leaf[2]) < pages && Math.floor(Number(leaf[2]) / PER_SECTION) === Number(leaf[1])) {
      const i = Number(leaf[2]);
      body = html(`Page ${i}`, textOf(i), []);
    }
    if (body === undefined) {
      res.writeHead(404, { "content-type": "text/html" }).end("<html><body><h1>Not found</h1></body></html>");
      return;
    }
    if (leaf) served.leaves += 1;
    else served.other += 1;
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    host: `127.0.0.1:${port}`,
    start: `${origin}/docs/`,
    pages,
    sections,
    total: 1 + sections + pages,
    served,
    textOf,
    change(which) {
      for (const i of which) versions[i] = (versions[i] as number) + 1;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
