// Rendering options: BLOCK_MEDIA (and pageOptions.blockMedia), pageOptions.headers, and the
// upstream proxy (PROXY_SERVER, PROXY_USERNAME, PROXY_PASSWORD) through a loopback proxy.
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { type Json, post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

let site: Site;
let thirdParty: Site;
const thirdPartyHeaders: (string | undefined)[] = [];
let proxy: Server;
let proxyUrl: string;
const proxied: { url: string; auth: string | undefined }[] = [];
const scrapers: Scraper[] = [];

/** A scraper for one test (closed when the test ends), or for the file with `{ scoped: false }`. */
async function scraperWith(overrides: Record<string, unknown>, opts: { scoped?: boolean } = {}): Promise<Scraper> {
  const s = await startScraper({
    allowedHosts: [`127.0.0.1:${site.port}`, `127.0.0.1:${thirdParty.port}`],
    ...overrides,
  });
  if (opts.scoped === false) scrapers.push(s);
  else onTestFinished(() => s.close());
  return s;
}

beforeAll(async () => {
  site = await startSite();
  thirdParty = await startSite();
  thirdParty.route("/pixel.png", (req, res) => {
    thirdPartyHeaders.push(req.headers["x-capstan-test"] as string | undefined);
    res.writeHead(200, { "content-type": "image/png" });
    res.end(Buffer.from("89504e470d0a1a0a", "hex"));
  });
  site.route(
    "/media",
    `<html><head><title>Media</title></head><body><p>text</p><img src="/photo.png"><video src="/clip.mp4"></video></body></html>`,
  );
  site.route("/photo.png", (_req, res) => {
    res.writeHead(200, { "content-type": "image/png" });
    res.end(Buffer.from("89504e470d0a1a0a", "hex"));
  });
  site.route("/echo", (req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(
      `<html><body><p id="h">${String(req.headers["x-capstan-test"] ?? "none")}</p>` +
        `<img src="${thirdParty.origin}/pixel.png"></body></html>`,
    );
  });
  // A minimal forward proxy (absolute-form HTTP requests), recording what passes.
  proxy = createServer((req, res) => {
    proxied.push({ url: req.url ?? "", auth: req.headers["proxy-authorization"] });
    const target = new URL(req.url ?? "");
    const headers = { ...req.headers };
    delete headers["proxy-authorization"];
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: req.method,
        headers,
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on("error", () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await Promise.all(scrapers.map((s) => s.close()));
  proxy?.closeAllConnections();
  proxy?.close();
  await site?.close();
  await thirdParty?.close();
});

const count = (path: string) => site.hits.filter((h) => h === path).length;

describe("media blocking", () => {
  it("loads images by default and blocks them with BLOCK_MEDIA=true", async () => {
    const loads = await scraperWith({});
    const before = count("/photo.png");
    expect((await post(loads.url, "/scrape", { url: `${site.origin}/media` })).status).toBe(200);
    expect(count("/photo.png")).toBe(before + 1);

    const clips = count("/clip.mp4");
    const blocks = await scraperWith({ blockMedia: true });
    const res = await post(blocks.url, "/scrape", { url: `${site.origin}/media` });
    expect(res.status).toBe(200);
    expect((res.body.data as Json).markdown).toContain("text");
    expect(count("/photo.png")).toBe(before + 1);
    expect(count("/clip.mp4")).toBe(clips);

    // pageOptions.blockMedia overrides the default per request.
    await post(loads.url, "/scrape", { url: `${site.origin}/media`, pageOptions: { blockMedia: true } });
    expect(count("/photo.png")).toBe(before + 1);
  });
});

describe("request headers", () => {
  it("sends pageOptions.headers to the target's host only, never to third parties", async () => {
    const s = await scraperWith({});
    const res = await post(s.url, "/scrape", {
      url: `${site.origin}/echo`,
      pageOptions: { headers: { "X-Capstan-Test": "hello" } },
      extractors: { h: "#h" },
    });
    expect((res.body.data as Json).extracted).toEqual({ h: "hello" });
    expect(thirdPartyHeaders).toEqual([undefined]);
  });
});

describe("upstream proxy", () => {
  it("sends page requests through PROXY_SERVER with PROXY_USERNAME/PROXY_PASSWORD", async () => {
    const s = await scraperWith({ proxy: { server: proxyUrl, username: "scraper", password: "s3cret" } });
    const res = await post(s.url, "/scrape", { url: `${site.origin}/media` });
    expect(res.status).toBe(200);
    expect(proxied.map((p) => p.url)).toContain(`${site.origin}/media`);
    expect(proxied[0]?.auth).toBe(`Basic ${Buffer.from("scraper:s3cret").toString("base64")}`);
  });

  it("still refuses private targets before handing them to the proxy", async () => {
    const s = await scraperWith({ proxy: { server: proxyUrl } });
    const before = proxied.length;
    const res = await post(s.url, "/scrape", { url: "http://169.254.169.254/" });
    expect(res.status).toBe(403);
    expect(proxied.length).toBe(before);
  });
});
