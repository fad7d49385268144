// Monitoring proven on the node: the Prometheus Operator (support/monitoring-stack.ts) runs a
// Prometheus that finds Capstan only through the chart's own ServiceMonitors, PodMonitor and
// PrometheusRule (monitoring.* values, the Prometheus admitted by networkPolicy.metricsFrom), with
// the console on and search on the chart's dev Qdrant. Every Capstan process must be up as a
// target; then real faults must make the chart's alerts fire within their `for` (shortened through
// monitoring.prometheusRule.for so the file takes minutes) and resolve once the fault is repaired:
// the gateway's pods gone (CapstanTargetMissing), Redis gone while chats keep being answered by
// the limiter's fallback (CapstanLimiterBackendDown, CapstanCircuitOpen), search's store
// unreachable (CapstanSearchStoreErrors), the operator's Lease taken by a holder that is not
// running (CapstanOperatorLeaderLost). Afterwards the platform is installed back as the other files
// install it (search on its embedded store, which kept its data).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Agent, fetch } from "undici";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { TestKube } from "../ground/kube-client.ts";
import { apply, deploymentReady, e2eKube, eventually, get, list, remove } from "./support/kube.ts";
import {
  type AlertMatch,
  cordon,
  explain,
  firing,
  holdLease,
  keepCalling,
  killPods,
  leaseHolder,
  noRunningPods,
  resolved,
  scale,
} from "./support/monitoring-faults.ts";
import { MONITORING_NS, type MonitoringStack, SELECTOR, startMonitoring } from "./support/monitoring-stack.ts";
import {
  DEMO_NS,
  ensurePlatform,
  helmInstall,
  ingressBase,
  ingressDispatcher,
  installValues,
  keyOf,
  SYSTEM_NS,
} from "./support/platform.ts";
import { serviceRouted } from "./support/service-routing.ts";
import { channel } from "./support/workloads.ts";

/** The `for` every alert under test gets here (the chart's defaults are minutes). */
const FOR_SECONDS = 10;
const TESTED = [
  "CapstanTargetMissing",
  "CapstanLimiterBackendDown",
  "CapstanCircuitOpen",
  "CapstanSearchStoreErrors",
  "CapstanOperatorLeaderLost",
];
/** From the fault to firing: the `for`, plus scrapes (2 s), evaluations (2 s) and the fault's own onset. */
const FIRE_WITHIN_MS = (FOR_SECONDS + 50) * 1000;
/** The dev Qdrant's claim, made by the chart and bound by the node's provisioner (kept on uninstall). */
const QDRANT_CLAIM = "capstan-qdrant-data";
const LEASE = "capstan-operator";
const at = (ns: string) => ({ namespace: ns });
let kube: TestKube;
let home: string;
let images: Record<string, string>;
let dispatcher: Agent;
let stack: MonitoringStack;
/** The key of the SearchKey this file creates. */
let searchKeyValue: string | undefined;
/** When the Redis test brought Redis back, for the last test (the limiter's recovery window). */
let limiterRecovery: { repair: number; firedAfter: number } | undefined;

/** The chart's values for this file: the platform's (the console included), plus monitoring and dev Qdrant. */
function monitoredValues(): string[] {
  const labelKey = Object.keys(SELECTOR)[0] as string;
  return installValues([
    "monitoring.serviceMonitor.enabled=true",
    "monitoring.serviceMonitor.interval=2s",
    "monitoring.serviceMonitor.scrapeTimeout=2s",
    "monitoring.podMonitor.enabled=true",
    "monitoring.podMonitor.interval=2s",
    "monitoring.prometheusRule.enabled=true",
    `monitoring.labels.${labelKey}=${SELECTOR.prometheus}`,
    ...TESTED.map((a) => `monitoring.prometheusRule.for.${a}=${FOR_SECONDS}s`),
    // Scraping is allowed to this Prometheus only (its namespace and the operator's pod label).
    `networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=${MONITORING_NS}`,
    "networkPolicy.metricsFrom[0].podSelector.matchLabels.app\\.kubernetes\\.io/name=prometheus",
    // The dev Qdrant's image is the release's (its images.yaml names it by digest).
    "qdrant.deploy.enabled=true",
  ]);
}

/** Search's Deployment as the operator renders it, once it names (or no longer names) Qdrant. */
async function searchOnQdrant(on: boolean): Promise<void> {
  await eventually(`search ${on ? "on" : "off"} Qdrant`, async () => {
    const d = await get(kube, "Deployment", "apps/v1", "capstan-search", SYSTEM_NS);
    return JSON.stringify(d?.spec?.template ?? {}).includes("capstan-qdrant") === on ? true : undefined;
  });
  await deploymentReady(kube, SYSTEM_NS, "capstan-search");
  await serviceRouted(kube, SYSTEM_NS, "capstan-search");
}

async function post(path: string, key: string, body: unknown): Promise<number> {
  try {
    const res = await fetch(`${ingressBase()}${path}`, {
      method: "POST",
      dispatcher,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
      // Longer than search's slowest answer: with its Qdrant gone it waits out three 10 s attempts
      // (and their backoff) before its 503, which a 30 s limit here cut off (counted as 0).
      signal: AbortSignal.timeout(60_000),
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}
/** How many results search gives for the example knowledge base's rate-limit question (0 on any failure). */
async function searchHits(key: string): Promise<number> {
  const res = await fetch(`${ingressBase()}/v1/rag/search`, {
    method: "POST",
    dispatcher,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ knowledgeIds: ["kb_product_docs"], text: "How do rate limits work?" }),
    signal: AbortSignal.timeout(30_000),
  });
  const body = (await res.json()) as { data?: unknown[] };
  return res.status === 200 ? (body.data?.length ?? 0) : 0;
}

const chat = (key: string) =>
  post("/api/v1/chat/completions", key, { model: "m", messages: [{ role: "user", content: "rate limits?" }] });
const search = (key: string) =>
  post("/v1/rag/search", key, { knowledgeIds: ["kb_product_docs"], text: "How do rate limits work?" });

/** Logs how an alert went: for the docs and for reading a slow run. */
function report(what: string, fired: number, cleared: number): void {
  console.log(
    `[e2e] monitoring: ${what}: firing ${fired.toFixed(1)} s after the fault, gone ${cleared.toFixed(1)} s after the repair`,
  );
}

beforeAll(async () => {
  kube = e2eKube();
  home = mkdtempSync(join(tmpdir(), "capstan-e2e-mon-"));
  const started = Date.now();
  // The monitoring stack needs nothing of the platform: both come up at once.
  const [installed, monitoring] = await Promise.all([
    ensurePlatform(kube, home),
    startMonitoring(kube, inject("e2eKubeconfig")),
  ]);
  images = installed.images;
  dispatcher = ingressDispatcher(installed.tls.ca);
  stack = monitoring;
  // A search key of this file's own, with a limit the store test's load cannot reach, issued now:
  // the operator does not reconcile while its Lease is held elsewhere.
  await apply(kube, {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "SearchKey",
    metadata: { name: "e2e-monitoring", namespace: DEMO_NS },
    spec: { keyName: "e2e monitoring", knowledgeIds: ["kb_product_docs"], requestsPerMinute: 1_000_000 },
  });
  searchKeyValue = await eventually("SearchKey e2e-monitoring issued", () =>
    keyOf(kube, "SearchKey", "e2e-monitoring"),
  );
  await helmInstall(home, monitoredValues());
  await searchOnQdrant(true);
  await deploymentReady(kube, SYSTEM_NS, "capstan-gateway");
  await serviceRouted(kube, SYSTEM_NS, "capstan-gateway");
  console.log(`[e2e] monitoring: platform, stack and the chart's monitoring up in ${Date.now() - started} ms`);
}, 900_000);

afterAll(async () => {
  const started = Date.now();
  await cordon(kube, false).catch(() => undefined);
  await stack?.stop();
  // Back to the values every other file installs: search on its embedded store again.
  if (images) {
    await helmInstall(home, installValues());
    await searchOnQdrant(false);
    // That store starts empty: the operator refills the example knowledge base as soon as search
    // is ready again (a KnowledgeBase's status still counts the chunks it had on Qdrant meanwhile),
    // and the next file starts once search answers from it.
    const key = searchKeyValue;
    if (key)
      await eventually(
        "product-docs answering from search's embedded store",
        async () => ((await searchHits(key)) > 0 ? true : undefined),
        120_000,
      );
    // The provisioner deletes its volume with the claim (StorageClass reclaimPolicy Delete).
    await remove(kube, "PersistentVolumeClaim", "v1", QDRANT_CLAIM, SYSTEM_NS);
  }
  await remove(kube, "SearchKey", "capstan.dev/v1alpha1", "e2e-monitoring", DEMO_NS);
  await remove(kube, "AccessChannel", "capstan.dev/v1alpha1", "e2e-monitoring", DEMO_NS);
  if (home) rmSync(home, { recursive: true, force: true });
  console.log(`[e2e] monitoring: platform restored in ${Date.now() - started} ms`);
}, 600_000);

describe("monitoring through the chart's own objects", () => {
  it("scrapes every Capstan process, found by the chart's ServiceMonitors and PodMonitor", async () => {
    const want: Record<string, number> = {
      "capstan-operator": 1,
      "capstan-gateway": 2,
      "capstan-search": 1,
      "capstan-console": 1,
      // The example Scraper's two pods and the chart's platform Scraper's one.
      "capstan-scraper": 3,
      "capstan-scraper-render": 3,
    };
    const seen = await eventually(
      "every Capstan target up",
      async () => {
        const up: Record<string, number> = {};
        for (const t of await stack.targets()) {
          const job = t.labels.job as string;
          if (!(job in want)) continue;
          // Every target comes from one of the chart's monitors.
          expect(t.scrapePool).toMatch(
            /^(serviceMonitor\/capstan-system\/capstan|podMonitor\/capstan-system\/capstan)/,
          );
          if (t.health === "up") up[job] = (up[job] ?? 0) + 1;
        }
        return Object.entries(want).every(([job, n]) => up[job] === n) ? up : undefined;
      },
      120_000,
    );
    expect(seen).toEqual(want);
    // The rules arrived through the PrometheusRule, with the `for` the values gave.
    const rules = await (await fetch(`${stack.url}/api/v1/rules?type=alert`)).json();
    const loaded = (rules as { data: { groups: { rules: { name: string; duration: number }[] }[] } }).data.groups
      .flatMap((g) => g.rules)
      .filter((r) => TESTED.includes(r.name));
    expect(loaded.map((r) => [r.name, r.duration]).sort()).toEqual(TESTED.map((n) => [n, FOR_SECONDS]).sort());
  });

  it("fires CapstanTargetMissing when the gateway's pods are gone, and clears it when they are back", async () => {
    const alert: AlertMatch = { alertname: "CapstanTargetMissing", job: "capstan-gateway", ...at(SYSTEM_NS) };
    await cordon(kube, true);
    try {
      const fault = Date.now();
      expect(await killPods(kube, SYSTEM_NS, "app.kubernetes.io/name=capstan-gateway")).toBe(2);
      await noRunningPods(kube, SYSTEM_NS, "app.kubernetes.io/name=capstan-gateway");
      const { afterSeconds } = await firing(stack, alert, fault, FIRE_WITHIN_MS);
      await cordon(kube, false);
      const repair = Date.now();
      await deploymentReady(kube, SYSTEM_NS, "capstan-gateway");
      report("gateway pods gone / CapstanTargetMissing", afterSeconds, await resolved(stack, alert, repair, 120_000));
    } finally {
      await cordon(kube, false);
    }
  });

  it("fires CapstanLimiterBackendDown and CapstanCircuitOpen while Redis is gone and chats are still answered", async () => {
    await channel(kube, "e2e-monitoring", 100_000);
    const key = await keyOf(kube, "AccessChannel", "e2e-monitoring");
    await serviceRouted(kube, SYSTEM_NS, "capstan-gateway");
    const limiter: AlertMatch = { alertname: "CapstanLimiterBackendDown", job: "capstan-gateway", ...at(SYSTEM_NS) };
    const breaker: AlertMatch = { alertname: "CapstanCircuitOpen", job: "capstan-gateway", ...at(SYSTEM_NS) };
    const chats = keepCalling(() => chat(key), 1_000);
    try {
      const fault = Date.now();
      await scale(kube, SYSTEM_NS, "capstan-redis", 0);
      const fired = await firing(stack, limiter, fault, FIRE_WITHIN_MS);
      const opened = await firing(stack, breaker, fault, FIRE_WITHIN_MS);
      await chats.stop();
      // The limiter fell back to each replica's share: every chat was answered, none refused.
      expect(chats.results.filter((r) => r.value !== 200)).toEqual([]);
      await scale(kube, SYSTEM_NS, "capstan-redis", 1);
      const repair = Date.now();
      await deploymentReady(kube, SYSTEM_NS, "capstan-redis");
      // The breaker closes at the first probe Redis answers.
      report("Redis gone / CapstanCircuitOpen", opened.afterSeconds, await resolved(stack, breaker, repair, 120_000));
      // The limiter trusts Redis alone again one window (60 s) later: the last test waits for that,
      // while the other faults run.
      limiterRecovery = { repair, firedAfter: fired.afterSeconds };
    } finally {
      await chats.stop();
      await scale(kube, SYSTEM_NS, "capstan-redis", 1);
    }
  });

  // The next two faults touch different components (search's store, the operator's Lease): they
  // run at the same time.
  it.concurrent("fires CapstanSearchStoreErrors while search's Qdrant is unreachable, and clears it as searches succeed again", async () => {
    const key = searchKeyValue as string;
    await eventually("the search key accepted", async () => ((await search(key)) === 200 ? true : undefined), 60_000);
    const alert: AlertMatch = { alertname: "CapstanSearchStoreErrors", job: "capstan-search", ...at(SYSTEM_NS) };
    // Four searches a second, up to 32 waiting at once: a search whose Qdrant vanished waits out
    // search's per-attempt timeout (10 s, three attempts) before it answers 503.
    const failing = keepCalling(() => search(key), 250, 32);
    let fired: number;
    try {
      // Qdrant gone at once, as in a crash (scaled down, it would keep serving through its 30 s
      // grace period), and not started again.
      await scale(kube, SYSTEM_NS, "capstan-qdrant", 0);
      const fault = Date.now();
      await killPods(kube, SYSTEM_NS, "app.kubernetes.io/name=capstan-qdrant");
      fired = (
        await firing(stack, alert, fault, FIRE_WITHIN_MS + 30_000).catch(async (err: Error) => {
          const seen = failing.results.map((r) => `${r.value} in ${r.ms} ms`).join(", ");
          const held = await explain(stack, [
            "sum by (job, namespace, code) (capstan_search_errors_total)",
            'sum by (target, outcome) (capstan_search_outbound_requests_total{target=~"qdrant_.*"})',
            'sum by (route, status) (capstan_search_http_requests_total{route!~"/healthz|/readyz|/metrics"})',
          ]);
          throw new Error(`${err.message}\nsearches: ${seen}\n${held}`);
        })
      ).afterSeconds;
    } finally {
      await failing.stop();
      await scale(kube, SYSTEM_NS, "capstan-qdrant", 1);
    }
    expect(
      failing.results.map((r) => r.value),
      failing.results.map((r) => `${r.value} in ${r.ms} ms`).join(", "),
    ).toContain(503);
    const repair = Date.now();
    await deploymentReady(kube, SYSTEM_NS, "capstan-qdrant");
    // The alert reads the share of answers that failed over 5 minutes: searches that succeed
    // again bring it under 5%, however many failed (a Qdrant that refuses connections fails
    // searches fast, hundreds of them). Bounded: at most 20,000 searches, four at a time, ended
    // as soon as the alert resolves.
    let done = false;
    let ok = 0;
    const worker = async () => {
      for (let i = 0; i < 5_000 && !done; i++) if ((await search(key)) === 200) ok++;
    };
    const load = Promise.all([worker(), worker(), worker(), worker()]);
    try {
      report("Qdrant gone / CapstanSearchStoreErrors", fired, await resolved(stack, alert, repair, 240_000));
    } finally {
      done = true;
      await load;
    }
    expect(ok).toBeGreaterThan(0);
  });

  it.concurrent("fires CapstanOperatorLeaderLost while the operator's Lease is held by a replica that is gone", async () => {
    const alert: AlertMatch = { alertname: "CapstanOperatorLeaderLost", job: "capstan-operator", ...at(SYSTEM_NS) };
    const leader = await leaseHolder(kube, SYSTEM_NS, LEASE);
    expect(leader).toBeTruthy();
    const fault = Date.now();
    const release = holdLease(kube, SYSTEM_NS, LEASE, "capstan-operator-partitioned");
    let fired: number;
    try {
      fired = (await firing(stack, alert, fault, FIRE_WITHIN_MS)).afterSeconds;
    } finally {
      await release();
    }
    const repair = Date.now();
    // A replica takes the Lease once the holder stops renewing it (leaseDurationSeconds, 15 s).
    await eventually("an operator replica leads again", async () =>
      (await leaseHolder(kube, SYSTEM_NS, LEASE)) !== "capstan-operator-partitioned" ? true : undefined,
    );
    report("operator Lease lost / CapstanOperatorLeaderLost", fired, await resolved(stack, alert, repair, 120_000));
    const pods = await list(kube, "Pod", "v1", SYSTEM_NS, "app.kubernetes.io/name=capstan-operator");
    expect(pods.length).toBe(1);
  });

  it("clears CapstanLimiterBackendDown one limiter window after Redis came back, not before", async () => {
    expect(limiterRecovery, "runs after the Redis test of this file").toBeDefined();
    const { repair, firedAfter } = limiterRecovery as { repair: number; firedAfter: number };
    const limiter: AlertMatch = { alertname: "CapstanLimiterBackendDown", job: "capstan-gateway", ...at(SYSTEM_NS) };
    await resolved(stack, limiter, repair, Math.max(1_000, repair + 180_000 - Date.now()));
    // When it stopped firing, from the ALERTS series Prometheus keeps (to its 2 s evaluations).
    const [last] = await stack.query(
      `max_over_time(timestamp(ALERTS{alertname="CapstanLimiterBackendDown",job="capstan-gateway",alertstate="firing"})[10m:2s])`,
    );
    const goneAfter = Number(last?.value[1]) - repair / 1000;
    report("Redis gone / CapstanLimiterBackendDown", firedAfter, goneAfter);
    // Redis was back no earlier than `repair`, and the recovery window lasts 60 s from then.
    expect(goneAfter).toBeGreaterThanOrEqual(58);
  });
});
