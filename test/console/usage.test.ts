// The usage page sums every gateway replica. Two real gateway processes (`node
// services/gateway/src/main.ts`, one channel, a fake provider speaking the OpenAI protocol) answer
// different numbers of requests; the page a viewer sees in Chromium must show their sum, whether
// the console reads the replicas itself or a real Prometheus that scrapes them. The replicas are
// found through the gateway Service's EndpointSlices with the console's own ServiceAccount, bound
// to the chart's Role (list EndpointSlices, nothing else); without it the page says why in words.
// The API server refuses EndpointSlices that point at loopback, so that step is checked on the
// URLs it yields, and the reads themselves on the two replicas' loopback URLs.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRegistry, generateKey, hashKey } from "@capstan/shared";
import { kubeConfigFromFile } from "@capstan/shared/kube";
import OpenAI from "openai";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { GatewayReplicas } from "../../console/src/gateway-replicas.ts";
import { replicaPolicy, UsageRecorder } from "../../console/src/usage.ts";
import { kubeConfigAs } from "../../console/src/user-api.ts";
import { type FakeOpenAI, startFakeOpenAI } from "../gateway/fake-openai.ts";
import { launchChromium } from "../ground/chromium.ts";
import { signIn, tokenWithRoleObjects, tokenWithRoles } from "../ground/console-users.ts";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";
import { type RunningPrometheus, startPrometheus } from "../monitoring/prometheus.ts";
import { ChartRun, MINIMAL, one } from "../operator/chart-kit.ts";
import { create, type Obj } from "../operator/helpers.ts";
import { type RunningConsole, startConsole } from "./helpers.ts";

const MAIN = fileURLToPath(new URL("../../services/gateway/src/main.ts", import.meta.url));
const run = new ChartRun("usage");
const ns = run.ns;
const key = generateKey("chat");
const dir = mkdtempSync(join(tmpdir(), "capstan-usage-"));
let fake: FakeOpenAI;
const gateways: { url: string; internal: string; proc: ManagedProcess }[] = [];
let viewer: string;
let browser: Browser;
let prom: RunningPrometheus | undefined;
const consoles: RunningConsole[] = [];
/** What the two replicas answered between them. */
const sent = { requests: 0, throttled: 0, tokens: 0 };

async function startGatewayProcess(): Promise<(typeof gateways)[number]> {
  const [port, internalPort] = [await freePort(), await freePort()];
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith("CAPSTAN_") && !k.startsWith("OTEL_") && k !== "REDIS_URL",
    ),
  );
  const proc = startProcess("gateway", process.execPath, [MAIN], {
    ...clean,
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    PORT: String(port),
    CAPSTAN_INTERNAL_PORT: String(internalPort),
    CAPSTAN_RESOURCES_DIR: dir,
    CAPSTAN_EGRESS_ALLOWED_HOSTS: "127.0.0.1",
    OTEL_SDK_DISABLED: "true",
  });
  const internal = `http://127.0.0.1:${internalPort}`;
  await waitFor("gateway ready", async () => (await fetch(`${internal}/readyz`)).ok, { timeoutMs: 60_000, proc });
  return { url: `http://127.0.0.1:${port}`, internal, proc };
}

beforeAll(async () => {
  await run.setup();
  fake = await startFakeOpenAI();
  // The channel as the API server holds it (what the viewer may list) and as the gateways read it
  // (a folder: each replica its own in-process limiter of 4 requests a minute).
  await create(run.admin, {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "Agent",
    metadata: { name: "writer", namespace: ns },
    spec: {},
  });
  await create(run.admin, {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "AccessChannel",
    metadata: { name: "web", namespace: ns },
    spec: { channelName: "web", agentRef: { name: "writer" } },
  });
  writeFileSync(
    join(dir, "platform.yaml"),
    `apiVersion: capstan.dev/v1alpha1
kind: Agent
metadata: {name: writer, namespace: ${ns}}
spec:
  provider: {baseURL: "${fake.baseURL}", model: echo, maxRetries: 0}
---
apiVersion: capstan.dev/v1alpha1
kind: AccessChannel
metadata: {name: web, namespace: ${ns}}
spec: {channelName: web, agentRef: {name: writer}, qpm: 4}
status: {keyHash: "${hashKey(key)}"}
`,
  );
  gateways.push(await startGatewayProcess(), await startGatewayProcess());
  // Counts that differ: 3 answers from the first replica, 4 answers and a 429 from the second.
  for (const [gw, n] of [
    [gateways[0], 3],
    [gateways[1], 5],
  ] as const) {
    const sdk = new OpenAI({ baseURL: `${gw?.url}/api/v1`, apiKey: key, maxRetries: 0 });
    for (let i = 0; i < n; i++) {
      sent.requests++;
      const res = await sdk.chat.completions
        .create({ model: "m", messages: [{ role: "user", content: `question ${i}` }] })
        .catch((e: { status?: number }) => e);
      if ("status" in res && res.status === 429) sent.throttled++;
      else sent.tokens += (res as OpenAI.ChatCompletion).usage?.total_tokens ?? 0;
    }
  }
  expect(sent).toMatchObject({ requests: 8, throttled: 1 });
  viewer = await tokenWithRoles(run.admin, ns, "usage-viewer", ["viewer"]);
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  for (const c of consoles) await c.close();
  await prom?.stop();
  for (const g of gateways) await g.proc.stop();
  await fake?.close();
  run.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** The usage table's row of the channel, as the viewer's page shows it after a Refresh. */
async function row(page: Page): Promise<{ requests: number; throttled: number; tokens: number }> {
  await page.getByRole("button", { name: "Refresh" }).click();
  const cells = page.getByTestId("usage-web").locator("td");
  await cells.first().waitFor();
  const n = async (i: number) => Number(await cells.nth(i).textContent());
  return { requests: await n(0), throttled: await n(1), tokens: await n(2) };
}

async function usagePage(overrides: Parameters<typeof startConsole>[1]): Promise<Page> {
  const app = await startConsole(inject("kubeconfig"), { defaultNamespace: ns, ...overrides });
  consoles.push(app);
  const page = await browser.newPage();
  await signIn(page, app.url, viewer);
  await page.goto(`${app.url}/#/usage`);
  return page;
}

describe("the usage page sums every gateway replica", () => {
  it("reading each replica's metrics itself", async () => {
    const page = await usagePage({ gatewayMetricsUrls: gateways.map((g) => `${g.internal}/metrics`) });
    expect(await row(page)).toEqual(sent);
    await page.close();
  });

  it("reading Prometheus, which scrapes both replicas", async () => {
    prom = await startPrometheus(
      gateways.map((g) => ({
        job: "capstan-gateway",
        address: new URL(g.internal).host,
        labels: { namespace: "capstan" },
      })),
    );
    await prom.waitForTargets();
    const page = await usagePage({
      prometheusUrl: prom.url,
      prometheusSelector: 'job="capstan-gateway",namespace="capstan"',
    });
    await expect.poll(() => row(page), { timeout: 30_000, interval: 1_000 }).toEqual(sent);
    await page.close();
  });
});

describe("the gateway replicas, from the gateway Service's EndpointSlices", () => {
  const slice = (name: string, service: string, addressType: string, endpoints: [string, string][]) => ({
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name, namespace: ns, labels: { "kubernetes.io/service-name": service } },
    addressType,
    // Pod addresses as a cluster gives them (never connected to here).
    endpoints: endpoints.map(([address, pod]) => ({
      addresses: [address],
      conditions: { ready: true },
      targetRef: { kind: "Pod", name: pod, namespace: ns },
    })),
    ports: [
      { name: "http", port: 8080, protocol: "TCP" },
      { name: "internal", port: 8090, protocol: "TCP" },
    ],
  });

  beforeAll(async () => {
    // Two replicas, dual-stack (each pod in an IPv4 and an IPv6 slice), and another Service's slice.
    const post = (body: unknown) =>
      run.admin.json(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, { method: "POST", body });
    await post(
      slice("capstan-gateway-v4", "capstan-gateway", "IPv4", [
        ["198.18.7.11", "gw-a"],
        ["198.18.7.12", "gw-b"],
      ]),
    );
    await post(
      slice("capstan-gateway-v6", "capstan-gateway", "IPv6", [
        ["fd00::11", "gw-a"],
        ["fd00::12", "gw-b"],
      ]),
    );
    await post(slice("capstan-search-v4", "capstan-search", "IPv4", [["198.18.7.21", "search-a"]]));
  });

  /** A ServiceAccount's identity as the console's own, bound to these Roles. */
  async function consoleIdentity(name: string, roles: Obj[]) {
    const token = await tokenWithRoleObjects(run.admin, ns, name, roles);
    return kubeConfigAs(kubeConfigFromFile(inject("kubeconfig")), token);
  }

  it("lists one metrics URL per replica with nothing but the chart's Role", async () => {
    const objects = await run.render([...MINIMAL, "console.enabled=true"]);
    const role = one(objects, "Role", `${run.release}-capstan-console-gateway-replicas`) as unknown as Obj;
    const cluster = await consoleIdentity("console-sa", [role]);
    const replicas = new GatewayReplicas(cluster, `${ns}/capstan-gateway`, createRegistry({ defaultMetrics: false }));
    expect(await replicas.metricsUrls()).toEqual([
      "http://198.18.7.11:8090/metrics",
      "http://198.18.7.12:8090/metrics",
    ]);
  });

  it("says in words what the API server refused when the console may not list them", async () => {
    const cluster = await consoleIdentity("console-sa-bare", []);
    const replicas = new GatewayReplicas(cluster, `${ns}/capstan-gateway`, createRegistry({ defaultMetrics: false }));
    const recorder = new UsageRecorder(() => replicas.metricsUrls(), {
      describe: replicas.describe(),
      policy: replicaPolicy(undefined),
    });
    try {
      const reading = await recorder.read();
      expect(reading.warning).toMatch(/EndpointSlices of Service .*\/capstan-gateway could not be read/);
      expect(reading.warning).toMatch(/cannot list resource "endpointslices"/);
    } finally {
      recorder.close();
    }
  });
});
