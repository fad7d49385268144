// SSRF guard end to end. Nothing here sends traffic anywhere but loopback: private and
// metadata addresses are refused by the guard on the (resolved) address before any
// connection, and a second loopback server that is not on the allow-list proves it by
// never receiving a request.

import { SsrfGuard } from "@capstan/scraper";
import { fetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Json, metricValue, post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

let site: Site;
let forbidden: Site;
let scraper: Scraper;
let open: Scraper;

beforeAll(async () => {
  site = await startSite();
  forbidden = await startSite();
  forbidden.route("/secret", "<html><body>SECRET</body></html>");
  site.route("/page", "<html><head><title>Allowed</title></head><body><p>allowed page</p></body></html>");
  site.route("/to-metadata", (_req, res) => {
    res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/" });
    res.end();
  });
  site.route("/to-private", (_req, res) => {
    res.writeHead(301, { location: "http://10.0.0.1/admin" });
    res.end();
  });
  site.route("/to-forbidden", (_req, res) => {
    res.writeHead(307, { location: `${forbidden.origin}/secret` });
    res.end();
  });
  site.route("/to-page", (_req, res) => {
    res.writeHead(302, { location: "/page" });
    res.end();
  });
  site.route(
    "/subresources",
    `<html><head><title>Subresources</title>
      <script src="http://10.0.0.1/x.js"></script>
      <link rel="stylesheet" href="http://[fd00::1]/style.css">
    </head><body>
      <p>visible text</p>
      <img src="http://169.254.169.254/latest/meta-data/iam.png">
      <img src="/local.png">
      <iframe src="${forbidden.origin}/secret"></iframe>
      <div id="out"></div>
      <script>
        fetch("${forbidden.origin}/secret")
          .then((r) => r.text())
          .then((t) => { document.getElementById("out").textContent = "LEAKED " + t; })
          .catch(() => { document.getElementById("out").textContent = "fetch refused"; });
      </script>
    </body></html>`,
  );
  site.route("/local.png", (_req, res) => {
    res.writeHead(200, { "content-type": "image/png" });
    res.end(Buffer.from("89504e470d0a1a0a", "hex"));
  });
  scraper = await startScraper({ allowedHosts: [`127.0.0.1:${site.port}`] });
  open = await startScraper({});
});

afterAll(async () => {
  await scraper?.close();
  await open?.close();
  await site?.close();
  await forbidden?.close();
});

describe("SSRF guard", () => {
  it("reaches the test's own loopback server only through the allow-list", async () => {
    const allowed = await post(scraper.url, "/scrape", { url: `${site.origin}/page` });
    expect(allowed.status).toBe(200);
    expect((allowed.body.data as Json).metadata.title).toBe("Allowed");

    const hits = site.hits.length;
    const refused = await post(open.url, "/scrape", { url: `${site.origin}/page` });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ success: false, code: "BLOCKED_TARGET" });
    expect(refused.body.error).toContain("loopback");
    expect(site.hits.length).toBe(hits);
  });

  const PROBES = [
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00::1]/",
    "http://[fe80::1]/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://0.0.0.0/",
    "http://0/",
    "http://[::]/",
    "http://127.0.0.1/",
    "http://127.1/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://017700000001/",
    "http://0177.0.0.1/",
    "http://0x7f.0.0.1/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[::7f00:1]/", // IPv4-compatible
    "http://[::a9fe:a9fe]/",
    "http://[::ffff:0:7f00:1]/", // SIIT
    "http://[64:ff9b::a9fe:a9fe]/", // NAT64
    "http://[2002:7f00:1::1]/", // 6to4
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", // Teredo, client 127.0.0.1
    "http://[2606:4700::5efe:a00:1]/", // ISATAP
    "http://localhost/",
    "http://LOCALHOST./",
    "https://127.0.0.1:443/",
  ];

  it.each(PROBES)("refuses %s with 403 before connecting", async (url) => {
    const before = await metricValue(scraper.registry, "capstan_scraper_api_ssrf_blocked_total");
    const res = await post(scraper.url, "/scrape", { url });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ success: false, code: "BLOCKED_TARGET" });
    expect(await metricValue(scraper.registry, "capstan_scraper_api_ssrf_blocked_total")).toBe(before + 1);
  });

  it("refuses another port of the allowed host", async () => {
    const res = await post(scraper.url, "/scrape", { url: `${forbidden.origin}/secret` });
    expect(res.status).toBe(403);
    expect(forbidden.hits).toEqual([]);
  });

  it.each([
    ["/to-metadata", "169.254.169.254"],
    ["/to-private", "10.0.0.1"],
    ["/to-forbidden", "127.0.0.1"],
  ])("refuses a redirect from an allowed page (%s → %s) in the renderer", async (path, address) => {
    const before = await metricValue(scraper.renderRegistry, "capstan_scraper_ssrf_blocked_total", {
      stage: "connect",
    });
    const res = await post(scraper.url, "/scrape", { url: `${site.origin}${path}` });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ success: false, code: "BLOCKED_TARGET" });
    expect(res.body.error).toContain(address);
    expect(
      await metricValue(scraper.renderRegistry, "capstan_scraper_ssrf_blocked_total", { stage: "connect" }),
    ).toBeGreaterThan(before);
    expect(forbidden.hits).toEqual([]);
  });

  it("follows an allowed redirect and reports the final URL", async () => {
    const res = await post(scraper.url, "/scrape", { url: `${site.origin}/to-page` });
    expect(res.status).toBe(200);
    expect((res.body.data as Json).metadata).toMatchObject({
      sourceURL: `${site.origin}/to-page`,
      url: `${site.origin}/page`,
      title: "Allowed",
    });
  });

  it("blocks sub-resources, frames and script fetches aimed at private addresses", async () => {
    const before = await metricValue(scraper.renderRegistry, "capstan_scraper_browser_requests_total", {
      outcome: "blocked_ssrf",
    });
    const res = await post(scraper.url, "/scrape", {
      url: `${site.origin}/subresources`,
      pageOptions: { waitFor: 1500 },
    });
    expect(res.status).toBe(200);
    const md = (res.body.data as Json).markdown as string;
    expect(md).toContain("visible text");
    expect(md).toContain("fetch refused");
    expect(md).not.toContain("LEAKED");
    expect(site.hits).toContain("/local.png");
    expect(forbidden.hits).toEqual([]);
    const after = await metricValue(scraper.renderRegistry, "capstan_scraper_browser_requests_total", {
      outcome: "blocked_ssrf",
    });
    // script, stylesheet, metadata image, iframe, fetch
    expect(after - before).toBeGreaterThanOrEqual(5);
  });
});

describe("guard dispatcher (DNS pinning)", () => {
  it("connects to the address it checked, not to a second resolution", async () => {
    // The system resolver knows no such name: a response proves the connection used the
    // guard's own (checked) answer.
    const guard = new SsrfGuard({
      allowedHosts: [`127.0.0.1:${site.port}`],
      resolve: async () => ["127.0.0.1"],
    });
    const dispatcher = guard.dispatcher();
    const res = await fetch(`http://rebind.capstan.test:${site.port}/page`, { dispatcher });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("allowed page");
    await dispatcher.close();
  });

  it("refuses a name whose answer includes a private address, without connecting", async () => {
    let calls = 0;
    const guard = new SsrfGuard({
      allowedHosts: [],
      resolve: async () => {
        calls++;
        return ["93.184.216.34", "10.0.0.1"];
      },
    });
    const dispatcher = guard.dispatcher();
    const err = await fetch("http://rebind.capstan.test/", { dispatcher }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect(((err as Error).cause as Error).message).toContain("10.0.0.1");
    expect(calls).toBe(1);
    await dispatcher.close();
  });
});
