// Client-side navigation and page reuse against real Chromium: a page that navigates itself
// (meta refresh, Refresh header, location.href, an auto-submitted form) ends in the final
// document or a clear error (403 through the SSRF guard, 502 when unreachable), never a
// chrome-error:// "success"; redirects to non-HTTP schemes are refused with 403; a hanging
// sub-resource does not hold the answer; a failed scrape never spoils the next ones, and no
// error carries another request's URL.
import type { ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../ground/ports.ts";
import { type Json, post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

let site: Site;
let forbidden: Site;
let closedPort: number;
let scraper: Scraper;
const held: ServerResponse[] = [];

const page = (title: string, body: string, head = "") =>
  `<!doctype html><html><head><title>${title}</title>${head}</head><body>${body}</body></html>`;

beforeAll(async () => {
  site = await startSite();
  forbidden = await startSite();
  closedPort = await freePort();
  forbidden.route("/secret", page("Secret", "<p>SECRET</p>"));
  const final = page("Final", "<h1>Final document</h1><p>the end of the journey</p>");
  site.route("/final", final);
  site.route("/echo", (req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString();
    });
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(page("Echo", `<p>method ${req.method}</p><p>body ${body}</p>`));
    });
  });
  const targets: Record<string, string> = {
    ok: "/final",
    blocked: `${forbidden.origin}/secret`,
    metadata: "http://169.254.169.254/latest/meta-data/",
    unreachable: `http://127.0.0.1:${closedPort}/gone`,
  };
  for (const [name, target] of Object.entries(targets)) {
    site.route(
      `/meta-${name}`,
      page("Meta", "<p>moving</p>", `<meta http-equiv="refresh" content="0; url=${target}">`),
    );
    site.route(`/header-${name}`, (_req, res) => {
      res.writeHead(200, { "content-type": "text/html", refresh: `0; url=${target}` });
      res.end(page("Header", "<p>moving</p>"));
    });
    site.route(
      `/script-${name}`,
      page("Script", `<p>moving</p><script>location.href = ${JSON.stringify(target)}</script>`),
    );
    site.route(
      `/form-${name}`,
      page(
        "Form",
        `<form method="post" action="${target === "/final" ? "/echo" : target}"><input name="q" value="capstan"></form>
         <script>document.forms[0].submit()</script>`,
      ),
    );
  }
  for (const [name, location] of Object.entries({
    data: "data:text/html,<h1>data document</h1>",
    file: "file:///etc/passwd",
    ftp: "ftp://127.0.0.1/file",
    javascript: "javascript:alert(1)",
  })) {
    site.route(`/redirect-${name}`, (_req, res) => {
      res.writeHead(302, { location });
      res.end();
    });
  }
  site.route("/hang.png", (_req, res) => {
    held.push(res); // never answered
  });
  site.route("/hanging-image", page("Hanging", `<p>text before the image</p><img src="/hang.png" alt="hangs">`));
  // Navigates itself after the scrape has answered, to a URL carrying a query string of its own.
  site.route(
    "/late",
    page("Late", `<p>late</p><script>setTimeout(() => { location.href = "/final?token=LATE-SECRET" }, 300)</script>`),
  );
  scraper = await startScraper({
    workerConcurrency: 1,
    allowedHosts: [`127.0.0.1:${site.port}`, `127.0.0.1:${closedPort}`],
  });
});

afterAll(async () => {
  for (const res of held) res.destroy();
  await scraper?.close();
  await site?.close();
  await forbidden?.close();
});

const scrape = (path: string, pageOptions: Record<string, unknown> = {}) =>
  post(scraper.url, "/scrape", { url: `${site.origin}${path}`, pageOptions });

describe("client-side navigation", () => {
  it.each(["meta", "header", "script"])("%s: ends in the final document", async (kind) => {
    const res = await scrape(`/${kind}-ok`);
    expect(res.status).toBe(200);
    const data = res.body.data as Json;
    expect(data.markdown).toContain("the end of the journey");
    expect(data.metadata.url).toBe(`${site.origin}/final`);
    expect(data.metadata.title).toBe("Final");
  });

  it("form POST: ends in the posted-to document, with the method and body", async () => {
    const res = await scrape("/form-ok");
    expect(res.status).toBe(200);
    const data = res.body.data as Json;
    expect(data.markdown).toContain("method POST");
    expect(data.markdown).toContain("body q=capstan");
    expect(data.metadata.url).toBe(`${site.origin}/echo`);
  });

  it.each(["meta", "header", "script", "form"].flatMap((kind) => [`${kind}-blocked`, `${kind}-metadata`]))(
    "%s: a blocked target is 403 through the guard",
    async (path) => {
      const res = await scrape(`/${path}`);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ success: false, code: "BLOCKED_TARGET" });
      expect(forbidden.hits).toEqual([]);
    },
  );

  it.each(["meta", "header", "script", "form"])("%s: an unreachable target is 502", async (kind) => {
    const res = await scrape(`/${kind}-unreachable`);
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ success: false, code: "UNREACHABLE" });
    expect(JSON.stringify(res.body)).not.toContain("chrome-error");
  });
});

describe("redirects to other schemes", () => {
  it.each(["data", "file", "ftp", "javascript"])("a redirect to %s: is refused by the guard with 403", async (name) => {
    const res = await scrape(`/redirect-${name}`);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ success: false, code: "BLOCKED_TARGET" });
    expect(JSON.stringify(res.body)).not.toContain("data document");
  });
});

describe("sub-resources", () => {
  // The request's own timeout is ten minutes: only the bounded settle time after the document
  // is ready lets this answer within the test's time limit.
  it("a hanging image does not hold the answer to the request timeout", { timeout: 60_000 }, async () => {
    const res = await scrape("/hanging-image", { timeout: 600_000 });
    expect(res.status).toBe(200);
    expect((res.body.data as Json).markdown).toContain("text before the image");
  });
});

describe("page reuse", () => {
  it("a failed scrape is followed by 100 valid ones with zero failures", { timeout: 240_000 }, async () => {
    // One page in the pool: every scrape runs on the page the failures ran on, unless replaced.
    const failing = ["/meta-blocked", "/script-unreachable", "/redirect-data", "/form-metadata", "/late"];
    const errors: string[] = [];
    for (const path of failing) {
      const res = await scrape(path);
      if (!res.body.success) errors.push(String(res.body.error));
    }
    expect(errors.length).toBe(failing.length - 1); // /late itself succeeds, then navigates
    const urls = Array.from({ length: 100 }, (_, i) => `${site.origin}/final?n=${i}`);
    const bulk = await post(scraper.url, "/scrape/bulk", { urls });
    expect(bulk.status).toBe(200);
    const failures = (bulk.body.data as Json[]).filter((d) => !d.success);
    expect(failures).toEqual([]);
    for (const e of errors) {
      expect(e).not.toMatch(/LATE-SECRET|n=\d/);
      expect(e).not.toContain(forbidden.origin);
    }
  });

  it("no error names another request's URL", async () => {
    const failed = await scrape("/script-unreachable?mine=1");
    expect(failed.status).toBe(502);
    expect(String(failed.body.error)).not.toContain("?");
    expect(String(failed.body.error)).not.toContain("LATE-SECRET");
  });
});
