// Every alert and dashboard query against a real Prometheus (Debian's, test/monitoring/prometheus.ts)
// scraping the running platform on loopback: a gateway (fake OpenAI-compatible provider, real
// Redis), search (real model, embedded store), a scraper (real Chromium) and an operator on the
// test API server (leader election on). Real traffic first: chats (200, 429, 401, a provider
// failure as 502, a stream), searches, a scrape, reconciles of an Agent and an AccessChannel that
// expires in 10 days. Then: every rule and panel expression is valid; every dashboard panel
// returns data; every metric an alert or rule names exists; every process's histograms carry only
// bounded labels; CapstanKeyExpiringSoon fires for the AccessChannel; and the overview dashboard,
// drawn in Chromium from the range Prometheus holds (dashboard-render.ts), has data in every panel.
// CAPSTAN_WRITE_DOCS=1 (`npm run docs:dashboards`) drives traffic for longer and writes that
// picture to docs/observability/overview.png.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRegistry, generateKey } from "@capstan/shared";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parse } from "yaml";
import type { Operator } from "../../operator/src/manager.ts";
import { buildMetricsApp } from "../../operator/src/server.ts";
import { type FakeOpenAI, startFakeOpenAI } from "../gateway/fake-openai.ts";
import { addResources, emptyView, type RunningGateway, startGateway, uniqueNamespace } from "../gateway/helpers.ts";
import { ensureNamespace, harnessKubeClient, installCrds } from "../ground/kube-client.ts";
import { waitFor } from "../ground/process.ts";
import { unboundedHistogramLabels } from "../metrics/exposition.ts";
import { create, startOperatorFor } from "../operator/helpers.ts";
import { post, type Scraper, type Site, startScraper, startSite } from "../scraper/helpers.ts";
import { HANDBOOK } from "../search/corpus.ts";
import { call, ingest, knowledgeBase, type Running, searchKey, startSearch } from "../search/helpers.ts";
import { queryDashboard, readDashboard, renderDashboard } from "./dashboard-render.ts";
import { withVariables } from "./dashboard-vars.ts";
import { DASHBOARDS_DIR, RULES_FILE, type RunningPrometheus, startPrometheus } from "./prometheus.ts";

interface Rule {
  record?: string;
  alert?: string;
  expr: string;
}
const rules = (parse(readFileSync(RULES_FILE, "utf8")) as { groups: { rules: Rule[] }[] }).groups.flatMap(
  (g) => g.rules,
);
const panels = readdirSync(DASHBOARDS_DIR)
  .filter((f) => f.endsWith(".json"))
  .flatMap((f) => {
    const d = JSON.parse(readFileSync(join(DASHBOARDS_DIR, f), "utf8")) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    // Grafana's "All" for the cluster, namespace and job variables (dashboard-vars.ts).
    return d.panels.flatMap((p) => p.targets.map((t) => ({ where: `${f}: ${p.title}`, expr: withVariables(t.expr) })));
  });

/** The metric names an expression reads (ours, controller-runtime's, client-go's, recording rules). */
function metricsOf(expr: string): string[] {
  const names = expr.match(
    /\b(capstan_[a-z0-9_]+(?::[a-z0-9_]+)*|controller_runtime_[a-z_]+|workqueue_[a-z_]+|rest_client_[a-z_]+|leader_election_master_status)\b/g,
  );
  return [...new Set(names ?? [])];
}

const WRITE_DOCS = process.env.CAPSTAN_WRITE_DOCS === "1";
const OVERVIEW_PNG = fileURLToPath(new URL("../../docs/observability/overview.png", import.meta.url));
const ns = uniqueNamespace("prom");
let fake: FakeOpenAI;
let gw: RunningGateway;
let search: Running;
let scraper: Scraper;
let site: Site;
let operator: Operator;
let operatorMetrics: ReturnType<typeof buildMetricsApp>;
let prom: RunningPrometheus;
const internalOf = (_gwUrl: string) => gw.internalUrl;
const hostOf = (url: string) => new URL(url).host;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  const view = emptyView();
  const keys = addResources(
    view,
    ns,
    [
      { name: "main", agent: "echo" },
      { name: "tight", agent: "echo", qpm: 1 },
      { name: "broken", agent: "failing" },
    ],
    [
      { name: "echo", spec: { provider: { baseURL: fake.baseURL, model: "echo", maxRetries: 0 } } },
      { name: "failing", spec: { provider: { baseURL: fake.baseURL, model: "status:500", maxRetries: 0 } } },
    ],
  );
  gw = await startGateway({ redisUrl: inject("redisUrl") }, { view, registry: createRegistry() });
  const searchToken = `cap_srch_prom_${process.pid}_${Date.now().toString(36)}`;
  search = await startSearch({
    kbs: [knowledgeBase("handbook")],
    keys: [searchKey(`prom-${process.pid}`, searchToken, { knowledgeIds: ["kb_handbook"] })],
  });
  site = await startSite();
  site.route(
    "/page",
    "<html><head><title>Runbook</title></head><body><main><h1>Runbook</h1><p>Restart it.</p></main></body></html>",
  );
  scraper = await startScraper({ allowedHosts: [`127.0.0.1:${site.port}`] });

  const admin = harnessKubeClient();
  await installCrds(admin);
  await ensureNamespace(admin, ns);
  operator = startOperatorFor(inject("kubeconfig"), ns, {
    leaderElection: { enabled: true, leaseName: `capstan-${ns}`, namespace: ns },
  });
  await operator.start();
  operatorMetrics = buildMetricsApp(operator);
  await operatorMetrics.listen({ port: 0, host: "127.0.0.1" });
  const operatorAddress = `127.0.0.1:${(operatorMetrics.server.address() as AddressInfo).port}`;

  // Traffic.
  const chat = (key: string, stream = false) =>
    gw.app.inject({
      method: "POST",
      url: "/api/v1/chat/completions",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      payload: { model: "m", stream, messages: [{ role: "user", content: "hi" }] },
    });
  for (let i = 0; i < 5; i++) expect((await chat(keys.main as string, i % 2 === 0)).statusCode).toBe(200);
  expect((await chat(keys.tight as string)).statusCode).toBe(200);
  expect((await chat(keys.tight as string)).statusCode).toBe(429);
  expect((await chat(keys.broken as string)).statusCode).toBe(502);
  expect((await chat(generateKey("chat"))).statusCode).toBe(401);
  await ingest(search.internalUrl, "kb_handbook", HANDBOOK.slice(0, 2));
  const body = { knowledgeIds: ["kb_handbook"], text: "vacation days", minSimilarity: 0 };
  for (let i = 0; i < 3; i++)
    expect((await call(search.url, "/v1/rag/search", { token: searchToken, body })).status).toBe(200);
  expect((await call(search.url, "/v1/rag/search", { token: searchToken, body: { text: 1 } })).status).toBe(400);
  expect((await post(scraper.url, "/scrape", { url: `${site.origin}/page` })).status).toBe(200);
  const expiresAt = new Date(Date.now() + 10 * 86_400_000).toISOString();
  await create(admin, {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "Agent",
    metadata: { name: "assistant", namespace: ns },
    spec: {},
  });
  await create(admin, {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "AccessChannel",
    metadata: { name: "expiring", namespace: ns },
    spec: { channelName: "Expiring", agentRef: { name: "assistant" }, expiresAt },
  });

  prom = await startPrometheus([
    { job: "capstan-gateway", address: hostOf(internalOf(gw.url)) },
    { job: "capstan-search", address: hostOf(search.internalUrl) },
    { job: "capstan-scraper", address: hostOf(scraper.adminUrl) },
    { job: "capstan-scraper-render", address: hostOf(scraper.renderUrl) },
    { job: "capstan-operator", address: operatorAddress },
  ]);
  await prom.waitForTargets();
  // More traffic while Prometheus watches, so rates over the first samples are not empty; for the
  // docs' picture, two minutes of it with a varying load and an occasional provider failure.
  const rounds = WRITE_DOCS ? 60 : 3;
  for (let i = 0; i < rounds; i++) {
    await new Promise((r) => setTimeout(r, 1500));
    for (let j = 0; j <= (WRITE_DOCS ? i % 4 : 0); j++) await chat(keys.main as string, j % 2 === 1);
    if (!WRITE_DOCS || i % 5 === 0) await chat(keys.broken as string);
    if (WRITE_DOCS && i % 7 === 0) await chat(keys.tight as string);
    await call(search.url, "/v1/rag/search", { token: searchToken, body });
  }
  // Recording rules and the key-expiry gauge need a few evaluations.
  await waitFor(
    "the error-ratio recording rule",
    async () => ((await prom.query("capstan_gateway:chat_errors:ratio_rate5m")).data?.result.length ?? 0) > 0,
    { timeoutMs: 60_000 },
  );
}, 480_000);

afterAll(async () => {
  await prom?.stop();
  await operatorMetrics?.close();
  await operator?.stop();
  await scraper?.close();
  await site?.close();
  await search?.close();
  await gw?.close();
  await fake?.close();
});

describe("alerts and dashboards on a real Prometheus", () => {
  it("evaluates every rule expression without error, and every metric a rule names exists", async () => {
    const missing: string[] = [];
    for (const r of rules) {
      const res = await prom.query(r.expr);
      expect(res.status, `${r.alert ?? r.record}: ${res.error}`).toBe("success");
      for (const name of metricsOf(r.expr)) {
        const found = await prom.query(`count({__name__="${name}"})`);
        if ((found.data?.result.length ?? 0) === 0) missing.push(`${r.alert ?? r.record}: ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("returns data for every dashboard panel", async () => {
    const empty: string[] = [];
    for (const p of panels) {
      const res = await prom.query(p.expr);
      expect(res.status, `${p.where}: ${res.error}`).toBe("success");
      if ((res.data?.result.length ?? 0) === 0) empty.push(p.where);
    }
    expect(empty).toEqual([]);
  });

  it("fires CapstanKeyExpiringSoon for the AccessChannel that expires in 10 days", async () => {
    const rule = rules.find((r) => r.alert === "CapstanKeyExpiringSoon") as Rule;
    const res = await prom.query(rule.expr);
    expect(res.data?.result.map((s) => s.metric.kind)).toEqual(["AccessChannel"]);
  });

  it("draws every panel of the overview dashboard from the range Prometheus holds", async () => {
    const data = await queryDashboard(prom.url, readDashboard(join(DASHBOARDS_DIR, "overview.json")), {
      start: prom.startedAt,
      end: Date.now() / 1000,
      source: "Prometheus scraping gateway, search, scraper and operator in test/monitoring/prometheus.test.ts",
    });
    const { png, drawn } = await renderDashboard(data);
    expect(drawn.map((p) => p.title)).toEqual(data.panels.map((p) => p.title));
    expect(drawn.filter((p) => p.series === 0 || p.points === 0).map((p) => p.title)).toEqual([]);
    if (WRITE_DOCS) {
      mkdirSync(dirname(OVERVIEW_PNG), { recursive: true });
      writeFileSync(OVERVIEW_PNG, png);
    }
  });

  it("finds only bounded labels on every process's histograms", async () => {
    const urls = [internalOf(gw.url), search.internalUrl, scraper.adminUrl, scraper.renderUrl];
    for (const url of urls) expect(unboundedHistogramLabels(await (await fetch(`${url}/metrics`)).text())).toEqual([]);
    expect(unboundedHistogramLabels(await operator.registry.metrics())).toEqual([]);
  });
});
