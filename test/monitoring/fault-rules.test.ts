// The fault alerts of charts/capstan/files/monitoring/rules.yaml against what the processes really
// export in those faults. A gateway on its own Redis and search on its own Qdrant (behind a fault
// proxy) serve traffic; their /metrics are read once healthy and once during the fault (Redis
// stopped: the breaker opens, the limiter falls back, the history buffer overflows; Qdrant
// refused: searches answer 503 "vector store unavailable"; for a second gateway, search refused:
// its retrieval breaker opens and refuses calls). promtool then runs the rules over a
// timeline made of those two readings (promtool-series.ts), labelled as the chart's
// ServiceMonitors label them: each alert stays quiet while healthy and fires, with its severity,
// job and namespace and its annotations, once the fault has lasted longer than its `for`.
// The node (test/e2e/monitoring.test.ts) shows the same alerts firing from a real Prometheus.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parse, stringify } from "yaml";
import {
  addResources,
  emptyView,
  metricValue,
  type RunningGateway,
  startGateway,
  uniqueNamespace,
} from "../gateway/helpers.ts";
import { post, waitUntil } from "../gateway/outage-helpers.ts";
import { type FaultProxy, startFaultProxy } from "../ground/fault-proxy.ts";
import { type QdrantServer, startQdrant } from "../ground/qdrant.ts";
import { type RedisServer, startRedis } from "../ground/redis.ts";
import { HANDBOOK } from "../search/corpus.ts";
import {
  call,
  INTERNAL_TOKEN,
  ingest,
  knowledgeBase,
  type Running,
  searchKey,
  startSearch,
} from "../search/helpers.ts";
import { PROMTOOL, RULES_FILE } from "./prometheus.ts";
import { faultTimeline, type InputSeries } from "./promtool-series.ts";

interface Rule {
  alert?: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules = (parse(readFileSync(RULES_FILE, "utf8")) as { groups: { rules: Rule[] }[] }).groups.flatMap(
  (g) => g.rules,
);
const NAMESPACE = "capstan";
const MINUTES = { healthy: 10, fault: 30 };
const SEARCH_KEY = "cap_srch_fault_rules";
let cases = 0;
const dir = mkdtempSync(join(tmpdir(), "capstan-fault-rules-"));
/** Readings of a process's /metrics before and during its fault, by fault. */
const readings: { name: string; job: string; before: string; during: string }[] = [];
let redis: RedisServer;
let gw: RunningGateway;
let gw2: RunningGateway;
let searchProxy: FaultProxy;
let qdrant: QdrantServer;
let proxy: FaultProxy;
let search: Running;

const metricsOf = async (internalUrl: string) => (await fetch(`${internalUrl}/metrics`)).text();
const searchOnce = () =>
  call(search.url, "/v1/rag/search", {
    token: SEARCH_KEY,
    body: { knowledgeIds: ["kb_faults"], text: "How many days of paid leave do I get?", minSimilarity: 0 },
  });

beforeAll(async () => {
  // The gateway: Redis decides the QPM and keeps history until it is stopped.
  redis = await startRedis();
  const view = emptyView();
  const offline = { name: "offline", spec: { description: "no provider, no knowledge" } };
  const keys = addResources(
    view,
    uniqueNamespace("rules"),
    [{ name: "c", agent: "offline", qpm: 100_000, keepHistory: true }],
    [offline],
  );
  gw = await startGateway(
    {
      redisUrl: redis.url,
      limiter: { redisTimeoutMs: 300, breakerFailures: 2, breakerProbeMs: 200 },
      history: { bufferEntries: 2, overflowLogIntervalMs: 600_000 },
    },
    { view },
  );
  const key = keys.c as string;
  for (let i = 0; i < 5; i++) expect((await post(gw.url, key)).status).toBe(200);
  await waitUntil(
    "history written to Redis",
    async () => (await metricValue(gw.url, "capstan_gateway_history_writes_total", { outcome: "ok" })) >= 5,
  );
  const gwBefore = await metricsOf(gw.internalUrl);
  await redis.stop();
  for (let i = 0; i < 8; i++) expect((await post(gw.url, key)).status).toBe(200);
  await waitUntil(
    "history dropped",
    async () => (await metricValue(gw.url, "capstan_gateway_history_buffer_dropped_total")) > 0,
  );
  readings.push({ name: "redis", job: "capstan-gateway", before: gwBefore, during: await metricsOf(gw.internalUrl) });

  // Search: Qdrant answers, then the proxy in front of it refuses every connection.
  qdrant = await startQdrant();
  proxy = await startFaultProxy(qdrant.httpPort);
  search = await startSearch({
    kbs: [knowledgeBase("faults")],
    keys: [searchKey("rules", SEARCH_KEY, { knowledgeIds: ["kb_faults"] })],
    config: { qdrant: { url: proxy.url(), timeoutMs: 1500, collectionPrefix: "capstan_fault_rules" } },
  });
  await ingest(search.internalUrl, "kb_faults", HANDBOOK.slice(0, 2));
  for (let i = 0; i < 5; i++) expect((await searchOnce()).status).toBe(200);
  const searchBefore = await metricsOf(search.internalUrl);
  // New connections refused, and the kept-alive ones cut.
  proxy.mode = "refuse";
  proxy.dropAll();
  for (let i = 0; i < 5; i++) expect((await searchOnce()).status).toBe(503);
  readings.push({
    name: "search",
    job: "capstan-search",
    before: searchBefore,
    during: await metricsOf(search.internalUrl),
  });
  proxy.mode = "pass";

  // A second gateway whose Agent retrieves from search, through a proxy that then refuses: its
  // breaker in front of search opens (Redis, the run's own, stays up).
  searchProxy = await startFaultProxy(Number(new URL(search.internalUrl).port));
  const view2 = emptyView();
  const knowledge = { knowledgeIds: ["kb_faults"], maxResults: 2, minSimilarity: 0 };
  const keys2 = addResources(view2, "default", [{ name: "k", agent: "docs" }], [{ name: "docs", spec: { knowledge } }]);
  gw2 = await startGateway(
    {
      redisUrl: inject("redisUrl"),
      search: { url: searchProxy.url(), internalToken: INTERNAL_TOKEN, timeoutMs: 1000, maxRetries: 0 },
    },
    { view: view2 },
  );
  for (let i = 0; i < 3; i++) expect((await post(gw2.url, keys2.k as string)).status).toBe(200);
  const gw2Before = await metricsOf(gw2.internalUrl);
  searchProxy.mode = "refuse";
  searchProxy.dropAll();
  await waitUntil("calls to search refused by the open breaker", async () => {
    await post(gw2.url, keys2.k as string);
    return (await metricValue(gw2.url, "capstan_gateway_outbound_requests_total", { outcome: "circuit_open" })) > 0;
  });
  readings.push({
    name: "retrieval",
    job: "capstan-gateway",
    before: gw2Before,
    during: await metricsOf(gw2.internalUrl),
  });
}, 180_000);

afterAll(async () => {
  await gw2?.close();
  await searchProxy?.close();
  await gw?.close();
  await redis?.stop();
  await search?.close();
  await proxy?.close();
  await qdrant?.stop(); // its storage, with the collections, goes too
  rmSync(dir, { recursive: true, force: true });
});

/** The alert as promtool expects it: the rule's labels and annotations, and the series' job and namespace. */
function expected(name: string, job: string) {
  const rule = rules.find((r) => r.alert === name);
  if (!rule) throw new Error(`no alert ${name} in ${RULES_FILE}`);
  return { exp_labels: { ...rule.labels, job, namespace: NAMESPACE }, exp_annotations: rule.annotations };
}

async function promtoolTest(input: InputSeries[], checks: { at: string; alert: string; job?: string }[]) {
  const tests = {
    rule_files: [RULES_FILE],
    evaluation_interval: "1m",
    tests: [
      {
        interval: "1m",
        input_series: input,
        alert_rule_test: checks.map((c) => ({
          eval_time: c.at,
          alertname: c.alert,
          exp_alerts: c.job ? [expected(c.alert, c.job)] : [],
        })),
      },
    ],
  };
  const file = join(dir, `case-${++cases}.test.yaml`);
  writeFileSync(file, stringify(tests));
  const res = await promisify(execFile)(PROMTOOL, ["test", "rules", file], { maxBuffer: 64 * 1024 * 1024 }).catch(
    (err: { stdout?: string; stderr?: string }) => {
      throw new Error(`promtool test rules failed:\n${err.stdout ?? ""}${err.stderr ?? ""}`);
    },
  );
  expect(res.stdout).toContain("SUCCESS");
}

const series = (name: string): InputSeries[] => {
  const r = readings.find((x) => x.name === name);
  if (!r) throw new Error(`no reading of the ${name} fault`);
  return faultTimeline(r.before, r.during, { job: r.job, namespace: NAMESPACE, instance: `${r.job}-0` }, MINUTES);
};
const healthyEnd = `${MINUTES.healthy - 1}m`;
/** Well past every `for` of the alerts below, with the fault still on. */
const faultLate = `${MINUTES.healthy + 15}m`;

describe("fault alerts on the series the processes export", () => {
  it("reads the gateway's breaker open, its limiter degraded and history dropped while Redis is gone", async () => {
    const r = readings.find((x) => x.name === "redis") as (typeof readings)[number];
    expect(r.during).toMatch(/^capstan_gateway_redis_breaker_state\{state="closed"\} 0$/m);
    expect(r.during).toMatch(/^capstan_gateway_limiter_degraded 1$/m);
    expect(r.during).toMatch(/^capstan_gateway_history_buffer_dropped_total [1-9]/m);
    expect(r.before).toMatch(/^capstan_gateway_redis_breaker_state\{state="closed"\} 1$/m);
  });

  it("fires CapstanCircuitOpen, CapstanLimiterBackendDown and CapstanGatewayHistoryDropped after their `for`, never while healthy", async () => {
    const job = "capstan-gateway";
    const alerts = ["CapstanCircuitOpen", "CapstanLimiterBackendDown", "CapstanGatewayHistoryDropped"];
    await promtoolTest(series("redis"), [
      ...alerts.map((alert) => ({ at: healthyEnd, alert })),
      ...alerts.map((alert) => ({ at: faultLate, alert, job })),
    ]);
  });

  it("reads search's answers failing with SEARCH_ERR_STORE while Qdrant refuses", async () => {
    const r = readings.find((x) => x.name === "search") as (typeof readings)[number];
    expect(r.during).toMatch(/^capstan_search_errors_total\{code="SEARCH_ERR_STORE"\} 5$/m);
    expect(r.before).not.toContain("SEARCH_ERR_STORE");
  });

  it("fires CapstanSearchStoreErrors after its `for`, never while healthy", async () => {
    const job = "capstan-search";
    await promtoolTest(series("search"), [
      { at: healthyEnd, alert: "CapstanSearchStoreErrors" },
      { at: faultLate, alert: "CapstanSearchStoreErrors", job },
    ]);
  });

  it("fires CapstanCircuitOpen when the gateway's breaker in front of search refuses calls, and nothing about Redis", async () => {
    const r = readings.find((x) => x.name === "retrieval") as (typeof readings)[number];
    expect(r.during).toMatch(
      /^capstan_gateway_outbound_requests_total\{target="search",outcome="circuit_open"\} [1-9]/m,
    );
    expect(r.during).toMatch(/^capstan_gateway_redis_breaker_state\{state="closed"\} 1$/m);
    const job = "capstan-gateway";
    await promtoolTest(series("retrieval"), [
      { at: healthyEnd, alert: "CapstanCircuitOpen" },
      { at: faultLate, alert: "CapstanCircuitOpen", job },
      { at: faultLate, alert: "CapstanLimiterBackendDown" },
    ]);
  });
});
