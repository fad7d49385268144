// schemathesis against the scraper process (src/main.ts, role "all": API and rendering service
// with the ground's Chromium) with authentication on and a real key. Targets stay on loopback: a
// local site is the only allowed host, and scraper_hooks.py points every generated http(s) URL at
// it (and turns a share of the generated targets into its page, so real pages are rendered).
// LLM extraction and web search are configured against loopback fakes (scraper-fakes.ts).
// Every case must answer without a 5xx, within the request timeout, with a status, content type
// and body the published /openapi.json declares.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect } from "vitest";
import type { ManagedProcess } from "../ground/process.ts";
import { type Site, startSite } from "../scraper/helpers.ts";
import { startService } from "./process.ts";
import { type ScraperFakes, startScraperFakes } from "./scraper-fakes.ts";
import { fuzzTests } from "./suite.ts";

const HOOKS = fileURLToPath(new URL("./scraper_hooks.py", import.meta.url));
const key = `fuzz-scraper-key-${process.pid}-0123456789`;
let site: Site;
let fakes: ScraperFakes;
let proc: ManagedProcess;
let origin: string;

beforeAll(async () => {
  site = await startSite();
  site.route(
    "/page",
    "<html><head><title>Fuzz page</title></head><body><main><h1>Fuzz</h1><p>A page to scrape.</p><a href='/other'>other</a></main></body></html>",
  );
  fakes = await startScraperFakes(site.origin);
  const started = await startService(
    "scraper",
    {
      API_KEY: key,
      AUTH_ENABLED: "true",
      RENDER_PORT: "0",
      SCRAPER_ALLOWED_HOSTS: `127.0.0.1:${site.port}`,
      WORKER_CONCURRENCY: "2",
      LOGGING_LEVEL: "warn",
      // Every feature configured: LLM extraction and web search answer 501 only when they are not.
      LLM_API_KEY: "sk-fuzz-provider-key",
      LLM_BASE_URL: fakes.llmBaseURL,
      SEARCH_ENDPOINT: fakes.searchEndpoint,
    },
    async ({ origin }) => (await fetch(`${origin}/health`)).status === 200,
    "ADMIN_PORT",
  );
  ({ proc, origin } = started);
}, 150_000);

afterAll(async () => {
  await proc?.stop();
  await fakes?.close();
  await site?.close();
});

fuzzTests(
  "scraper",
  () => ({ origin, key, proc, env: { SCHEMATHESIS_HOOKS: HOOKS, CAPSTAN_FUZZ_SITE: site.origin } }),
  { maxExamples: 15, hardTimeoutS: 170, requestTimeoutS: 20 },
  () => {
    // Chromium rendered the local site's page: the cases were not all refused before rendering.
    expect(site.hits.filter((h) => h.startsWith("/page")).length).toBeGreaterThan(0);
    // Crawls or maps reached the site: only they read robots.txt.
    expect(site.hits).toContain("/robots.txt");
  },
);
