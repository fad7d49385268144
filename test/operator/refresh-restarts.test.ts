// A KnowledgeBase refresh survives a restart of each process it runs through: real API server,
// the operator (in this process, stopped and started again as a new Operator), search as its own
// process (`services/search/src/main.ts`, the run's Qdrant) and the scraper as its own process
// (`services/scraper/src/main.ts` with its crawl jobs in Redis, beside an in-process rendering
// service with the test ground's Chromium), crawling a loopback site of 80 slow pages.
// 1. the scraper is killed (SIGKILL) mid-crawl and started again on its port;
// 2. the operator stops mid-refresh (after the site changed) and a new one starts;
// 3. search is killed (SIGKILL) mid-ingestion (every page changed) and started again.
// After each, search holds exactly the site's pages: one document per page, none of a removed
// page, none twice, each with the page's current text, all stamped by the one refresh that ran.
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { buildRenderService, type RenderService, scraperConfig } from "@capstan/scraper";
import { createLogger } from "@capstan/shared";
import { type IngestedDocument, SearchClient } from "@capstan/shared/clients/search-client";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";
import { dropCollections, qdrantPrefix } from "../ground/qdrant.ts";
import { type RedisServer, startRedis } from "../ground/redis.ts";
import { type Site, startSite } from "../scraper/helpers.ts";
import {
  CAP,
  create,
  eventually,
  get,
  internalTokenSecret,
  type Obj,
  patch,
  refreshedKnowledgeBase,
  startOperatorFor,
} from "./helpers.ts";

const SCRAPER_MAIN = fileURLToPath(new URL("../../services/scraper/src/main.ts", import.meta.url));
const SEARCH_MAIN = fileURLToPath(new URL("../../services/search/src/main.ts", import.meta.url));
const ns = `restarts-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = "refresh-restarts-test-token-0123456789";
const REF = { namespace: ns, knowledgeId: "kb_site" };
const KB = { apiVersion: CAP, kind: "KnowledgeBase", ns, name: "site" };
const prefix = qdrantPrefix("restarts");
const qdrantUrl = inject("qdrantUrl");

let client: TestKube;
let site: Site;
let redis: RedisServer;
let render: RenderService;
let renderUrl: string;
let operator: Operator;
let scraper: ManagedProcess;
let search: ManagedProcess;
const ports = { scraper: 0, scraperAdmin: 0, search: 0, searchInternal: 0 };
const internalUrl = () => `http://127.0.0.1:${ports.searchInternal}`;
let docs: SearchClient;

/** The site: /docs/ links to every page; each page's text carries its version. */
const pages = new Map<string, number>(Array.from({ length: 80 }, (_, i) => [`/docs/p${i}`, 1]));
const textOf = (path: string) => `Page ${path} of the site, version ${pages.get(path)}, about telescopes and comets.`;
const html = (title: string, body: string, links: string[]) =>
  `<!DOCTYPE html><html><head><title>${title}</title></head><body><main><h1>${title}</h1><p>${body}</p>` +
  links.map((l) => `<a href="${l}">${l}</a>`).join(" ") +
  "</main></body></html>";

function serve(s: Site, path: string) {
  s.route(path, (_req, res) => {
    // Every answer takes 100 ms, so a crawl lasts long enough to be interrupted.
    setTimeout(() => {
      if (!pages.has(path) && path !== "/docs/") {
        res.writeHead(404, { "content-type": "text/html" });
        res.end(html("Gone", "Gone", []));
        return;
      }
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(
        path === "/docs/" ? html("Index", "The index.", [...pages.keys()]) : html(path, textOf(path), ["/docs/"]),
      );
    }, 100);
  });
}

const cleanEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("CAPSTAN_")));

async function startScraperProcess(): Promise<void> {
  scraper = startProcess("scraper", process.execPath, [SCRAPER_MAIN], {
    ...cleanEnv(),
    SCRAPER_ROLE: "api",
    PORT: String(ports.scraper),
    ADMIN_PORT: String(ports.scraperAdmin),
    HOST: "127.0.0.1",
    RENDER_URL: renderUrl,
    REDIS_URL: redis.url,
    SCRAPER_ALLOWED_HOSTS: `127.0.0.1:${site.port}`,
    SCRAPER_JOB_LOCK_MS: "2000",
    WORKER_CONCURRENCY: "3",
    LOGGING_LEVEL: "warn",
    OTEL_SDK_DISABLED: "true",
  });
  const url = `http://127.0.0.1:${ports.scraper}/health`;
  await waitFor("scraper listening", async () => (await fetch(url)).status === 200, {
    timeoutMs: 60_000,
    proc: scraper,
  });
}

async function startSearchProcess(): Promise<void> {
  search = startProcess("search", process.execPath, [SEARCH_MAIN], {
    ...cleanEnv(),
    PORT: String(ports.search),
    CAPSTAN_INTERNAL_PORT: String(ports.searchInternal),
    HOST: "127.0.0.1",
    CAPSTAN_INTERNAL_TOKEN: TOKEN,
    KUBECONFIG: inject("kubeconfig"),
    QDRANT_URL: qdrantUrl,
    CAPSTAN_QDRANT_COLLECTION_PREFIX: prefix,
    LOG_LEVEL: "warn",
    OTEL_SDK_DISABLED: "true",
  });
  const ready = async () => (await fetch(`${internalUrl()}/readyz`)).status === 200;
  await waitFor("search ready", ready, { timeoutMs: 120_000, proc: search });
}

function startOperator(): Promise<void> {
  operator = startOperatorFor(inject("kubeconfig"), ns, {
    search: { internalUrl: internalUrl() },
    scraping: { url: `http://127.0.0.1:${ports.scraper}`, timeout: 20, max_retries: 1 },
  });
  return operator.start();
}

/** Every document search holds for the knowledge base, all pages of the listing. */
async function documents(): Promise<IngestedDocument[]> {
  const all: IngestedDocument[] = [];
  let from: string | undefined;
  do {
    const page = await docs.ingestedDocuments(REF, { limit: 1000, ...(from ? { from } : {}) });
    all.push(...page.documents);
    from = page.next;
  } while (from);
  return all;
}

/** The KnowledgeBase once the refresh of its current generation has ended with every source in. */
const refreshed = () => refreshedKnowledgeBase(client, ns, "site", 240_000);

/** The refresh now running (its id in status), once the site has had `hits` more requests. */
async function midRefresh(hitsBefore: number, hits: number): Promise<string> {
  return eventually(
    "a refresh under way",
    async () => {
      const kb = (await get(client, CAP, "KnowledgeBase", ns, "site")) as Obj;
      const refresh = (kb.status?.refresh as { name?: string } | undefined)?.name;
      return refresh && site.hits.length - hitsBefore >= hits ? refresh : undefined;
    },
    120_000,
  );
}

/** Search holds exactly the site's pages, each with its current text, all from `refresh`. */
async function expectExactlyTheSite(refresh: string) {
  const held = await documents();
  const origins = held.map((d) => d.origin);
  expect(origins.length).toBe(new Set(origins).size); // none twice
  const expected = ["/docs/", ...pages.keys()].map((p) => `${site.origin}${p}`).sort();
  expect([...origins].sort()).toEqual(expected); // none lost, none left of a removed page
  expect(new Set(held.map((d) => d.refresh))).toEqual(new Set([refresh]));
  for (const d of held) expect(d.chunks, d.origin).toBeGreaterThan(0);
  const kb = (await get(client, CAP, "KnowledgeBase", ns, "site")) as Obj;
  expect(kb.status).toMatchObject({ documents: expected.length, failures: 0 });
  // The text searched is each page's current version.
  for (const path of ["/docs/p0", "/docs/p40"]) {
    const hits = await docs.search({ knowledgeIds: [REF.knowledgeId], text: textOf(path), maxResults: 1 });
    expect(hits[0]?.text, path).toContain(textOf(path));
  }
}

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, ns);
  await internalTokenSecret(client, ns, TOKEN);
  redis = await startRedis();
  site = await startSite();
  serve(site, "/docs/");
  for (let i = 0; i < 90; i++) serve(site, `/docs/p${i}`);
  const allowedHosts = [`127.0.0.1:${site.port}`];
  const logger = createLogger({ name: "render", level: "silent" });
  render = buildRenderService(scraperConfig({ workerConcurrency: 4, allowedHosts }), { logger });
  await render.start({ warm: false });
  await render.app.listen({ port: 0, host: "127.0.0.1" });
  renderUrl = `http://127.0.0.1:${(render.app.server.address() as AddressInfo).port}`;
  for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
  await Promise.all([startScraperProcess(), startSearchProcess()]);
  docs = new SearchClient({ baseURL: internalUrl(), token: TOKEN, namespace: ns, timeoutMs: 30_000 });
  await startOperator();
}, 300_000);

afterAll(async () => {
  await operator?.stop();
  await Promise.all([scraper?.stop(), search?.stop()]);
  await render?.close();
  await site?.close();
  await redis?.stop();
  await dropCollections(qdrantUrl, prefix);
});

describe("a KnowledgeBase refresh through restarts", () => {
  it("ends with exactly the site's pages after the scraper was killed mid-crawl", async () => {
    const before = site.hits.length;
    await create(client, {
      apiVersion: CAP,
      kind: "KnowledgeBase",
      metadata: { name: "site", namespace: ns },
      spec: { sources: [{ name: "Site", crawl: { url: `${site.origin}/docs/`, limit: 500 } }] },
    });
    const refresh = await midRefresh(before, 20);
    scraper.child.kill("SIGKILL");
    await new Promise((r) => scraper.child.once("exit", r));
    await startScraperProcess();
    await refreshed();
    await expectExactlyTheSite(refresh);
  }, 300_000);

  it("ends with exactly the changed site's pages after the operator restarted mid-refresh", async () => {
    // The site changes: a page goes, one comes, ten are rewritten.
    pages.delete("/docs/p79");
    pages.set("/docs/p80", 1);
    for (let i = 0; i < 10; i++) pages.set(`/docs/p${i}`, 2);
    const before = site.hits.length;
    await patch(client, KB, { spec: { description: "v2" } });
    const refresh = await midRefresh(before, 20);
    await operator.stop();
    await startOperator();
    await refreshed();
    await expectExactlyTheSite(refresh);
  }, 300_000);

  it("ends with exactly the site's pages after search was killed mid-ingestion", async () => {
    for (const p of pages.keys()) pages.set(p, 3); // every page is embedded again
    const written = async () => {
      const text = await (await fetch(`${internalUrl()}/metrics`)).text();
      const lines = text.split("\n").filter((l) => l.startsWith("capstan_search_ingested_documents_total"));
      return lines.reduce((n, l) => n + Number(l.split(" ").pop()), 0);
    };
    const base = await written();
    await patch(client, KB, { spec: { description: "v3" } });
    const refresh = await midRefresh(site.hits.length, 0);
    await eventually("search mid-ingestion", async () => (await written()) - base >= 10, 120_000);
    search.child.kill("SIGKILL");
    await new Promise((r) => search.child.once("exit", r));
    const afterKill = await documents().catch(() => "search down");
    expect(afterKill).toBe("search down");
    await startSearchProcess();
    await refreshed();
    await expectExactlyTheSite(refresh);
  }, 300_000);
});
