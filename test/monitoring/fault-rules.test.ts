// The fault alerts of charts/capstan/files/monitoring/rules.yaml against what the processes really
// export in those faults. A gateway on its own Redis and search on its own Qdrant (behind a fault
// proxy) serve traffic; their /metrics are read once healthy and once during the fault (Redis
// stopped: the breaker opens, the limiter falls back, the history buffer overflows; Qdrant
// refused: searches answer 503 "vector store unavailable"). promtool then runs the rules over a
// timeline made of those two readings (promtool-series.ts), labelled as the chart's
// ServiceMonitors label them: each alert stays quiet while healthy and fires, with its severity,
// job and namespace and its annotations, once the fault has lasted longer than its `for`.
// The node (test/e2e/monitoring.test.ts) shows the same alerts firing from a real Prometheus.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
import { call, ingest, knowledgeBase, type Running, searchKey, startSearch } from "../search/helpers.ts";
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
const dir = mkdtempSync(join(tmpdir(), "capstan-fault-rules-"));
const readings: { job: string; before: string; during: string }[] = [];
let redis: RedisServer;
let gw: RunningGateway;
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
  readings.push({ job: "capstan-gateway", before: gwBefore, during: await metricsOf(gw.internalUrl) });

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
  readings.push({ job: "capstan-search", before: searchBefore, during: await metricsOf(search.internalUrl) });
}, 180_000);

afterAll(async () => {
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
  const file = join(dir, `${checks[0]?.alert}.test.yaml`);
  writeFileSync(file, stringify(tests));
  const res = await promisify(execFile)(PROMTOOL, ["test", "rules", file], { maxBuffer: 64 * 1024 * 1024 }).catch(
    (err: { stdout?: string; stderr?: string }) => {
      throw new Error(`promtool test rules failed:\n${err.stdout ?? ""}${err.stderr ?? ""}`);
    },
  );
  expect(res.stdout).toContain("SUCCESS");
}

const series = (job: string): InputSeries[] => {
  const r = readings.find((x) => x.job === job);
  if (!r) throw new Error(`no reading of ${job}`);
  return faultTimeline(r.before, r.during, { job, namespace: NAMESPACE, instance: `${job}-0` }, MINUTES);
};
const healthyEnd = `${MINUTES.healthy - 1}m`;
/** Well past every `for` of the alerts below, with the fault still on. */
const faultLate = `${MINUTES.healthy + 15}m`;

describe("fault alerts on the series the processes export", () => {
  it("reads the gateway's breaker open, its limiter degraded and history dropped while Redis is gone", async () => {
    const r = readings[0] as (typeof readings)[number];
    expect(r.during).toMatch(/^capstan_gateway_redis_breaker_state\{state="closed"\} 0$/m);
    expect(r.during).toMatch(/^capstan_gateway_limiter_degraded 1$/m);
    expect(r.during).toMatch(/^capstan_gateway_history_buffer_dropped_total [1-9]/m);
    expect(r.before).toMatch(/^capstan_gateway_redis_breaker_state\{state="closed"\} 1$/m);
  });

  it("fires CapstanCircuitOpen, CapstanLimiterBackendDown and CapstanGatewayHistoryDropped after their `for`, never while healthy", async () => {
    const job = "capstan-gateway";
    const alerts = ["CapstanCircuitOpen", "CapstanLimiterBackendDown", "CapstanGatewayHistoryDropped"];
    await promtoolTest(series(job), [
      ...alerts.map((alert) => ({ at: healthyEnd, alert })),
      ...alerts.map((alert) => ({ at: faultLate, alert, job })),
    ]);
  });

  it("reads search's answers failing with SEARCH_ERR_STORE while Qdrant refuses", async () => {
    const r = readings[1] as (typeof readings)[number];
    expect(r.during).toMatch(/^capstan_search_errors_total\{code="SEARCH_ERR_STORE"\} 5$/m);
    expect(r.before).not.toContain("SEARCH_ERR_STORE");
  });

  it("fires CapstanSearchStoreErrors after its `for`, never while healthy", async () => {
    const job = "capstan-search";
    await promtoolTest(series(job), [
      { at: healthyEnd, alert: "CapstanSearchStoreErrors" },
      { at: faultLate, alert: "CapstanSearchStoreErrors", job },
    ]);
  });
});
