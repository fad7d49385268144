// The `scraping:` section of the platform configuration file (CAPSTAN_CONFIG) in standalone mode:
// its url, api_key, timeout and max_retries are what the launcher uses. A real scraper (Chromium)
// that requires its key stands elsewhere; `npm start` once, with no scraper of its own, ingests a
// knowledge base whose URL and crawl sources it can fetch only through that scraper with that key.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../ground/ports.ts";
import { type Scraper, type Site, startScraper, startSite } from "../scraper/helpers.ts";

const KEY = "standalone-scraping-key-0123";
let site: Site;
let scraper: Scraper;

beforeAll(async () => {
  site = await startSite();
  site.route(
    "/handbook",
    "<html><head><title>Harbour handbook</title></head><body><main><p>The lighthouse keeper files a tide report at dusk.</p></main></body></html>",
  );
  // A two-page section for the crawl source, and a page below its maxDepth.
  const page = (text: string, links: string[]) =>
    `<html><body><main><p>${text}</p>${links.map((l) => `<a href="${l}">${l}</a>`).join(" ")}</main></body></html>`;
  site.route(
    "/harbour/",
    page("The harbour master opens the locks at high water.", ["/harbour/tides", "/harbour/a/b"]),
  );
  site.route("/harbour/tides", page("Spring tides come twice a month.", ["/harbour/"]));
  site.route("/harbour/a/b", page("Too deep for the crawl.", []));
  scraper = await startScraper({ apiKey: KEY, authEnabled: true, allowedHosts: [`127.0.0.1:${site.port}`] });
});

afterAll(async () => {
  await scraper?.close();
  await site?.close();
});

/** `npm start` once (start, ingest, print, exit) with this scraping section; its output. */
async function startOnce(scraping: Record<string, unknown>): Promise<{ code: number | null; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), "capstan-scraping-"));
  const resources = join(dir, "resources");
  mkdirSync(resources);
  writeFileSync(
    join(resources, "kb.yaml"),
    [
      "apiVersion: capstan.dev/v1alpha1",
      "kind: KnowledgeBase",
      "metadata: {name: handbook, namespace: harbour}",
      "spec:",
      "  knowledgeId: kb_handbook",
      "  sources:",
      "    - {name: Intro, text: Ships dock at the north pier.}",
      `    - {name: Handbook, url: "${site.origin}/handbook"}`,
      `    - {name: Harbour, crawl: {url: "${site.origin}/harbour/", maxDepth: 1}}`,
      "",
    ].join("\n"),
  );
  writeFileSync(join(dir, "capstan.json"), JSON.stringify({ scraping }));
  const ports = await Promise.all(Array.from({ length: 6 }, () => freePort()));
  const child = spawn(process.execPath, ["scripts/standalone/main.ts"], {
    env: {
      ...process.env,
      CAPSTAN_CONFIG: join(dir, "capstan.json"),
      CAPSTAN_RESOURCES_DIR: resources,
      CAPSTAN_STATE_DIR: join(dir, "state"),
      CAPSTAN_STANDALONE_ONCE: "1",
      CAPSTAN_CONSOLE: "off",
      GATEWAY_PORT: String(ports[0]),
      GATEWAY_INTERNAL_PORT: String(ports[1]),
      SEARCH_PORT: String(ports[2]),
      SEARCH_INTERNAL_PORT: String(ports[3]),
      SCRAPER_PORT: String(ports[4]),
      SCRAPER_ADMIN_PORT: String(ports[5]),
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`, // none: the in-process limiter
      OTEL_SDK_DISABLED: "true",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  for (const s of [child.stdout, child.stderr]) s?.on("data", (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  return { code, output };
}

describe("npm start with a scraping section", () => {
  it("scrapes URL and crawl sources through the section's url with its api_key, timeout and max_retries", async () => {
    const { code, output } = await startOnce({ url: scraper.url, api_key: KEY, timeout: 20, max_retries: 0 });
    expect(code, output).toBe(0);
    expect(output).toContain(`Scraping: ${scraper.url} (external; timeout 20 s, 0 retries, API key set)`);
    // Every source: the pages came through the keyed scraper (no local scraper was started); the
    // crawl's two pages within maxDepth are one document each.
    expect(output).toMatch(/Knowledge base kb_handbook: 4 documents, \d+ chunks ingested/);
    expect(site.hits).toContain("/harbour/tides");
    expect(site.hits).not.toContain("/harbour/a/b");
    expect(output).not.toMatch(/Scraper:\s+http/);
    expect(output).not.toContain(KEY);
    expect(site.hits.filter((h) => h === "/handbook").length).toBeGreaterThan(0);
  }, 300_000);

  it("refuses a misspelled key of the section before starting anything, naming the valid one", async () => {
    const { code, output } = await startOnce({ url: scraper.url, max_retry: 1 });
    expect(code).toBe(2);
    expect(output).toContain("scraping.max_retry: unknown key (did you mean scraping.max_retries?)");
  }, 60_000);
});
