// The chart's dashboards against series read from running processes, as an SRE's Grafana would
// query them: a gateway (fake OpenAI-compatible provider, real Redis) and three operators on the
// test API server, two of them replicas electing a leader on one Lease (both scraped under one job,
// as the ServiceMonitor scrapes the Deployment's pods) and one alone in another namespace with
// leader election off, all scraped by a real Prometheus with the `cluster` and `namespace` target
// labels a multi-cluster setup gives them. Every panel query of every dashboard filters on the
// cluster, namespace and job variables; each gateway and operator panel with data shows nothing
// once any one variable matches nothing; and the operator's state (keys, knowledge bases) is
// counted once, from the leader, not once per replica (and from the one replica where no Lease is
// elected).
import { readdirSync, readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createRegistry, generateKey } from "@capstan/shared";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { buildMetricsApp } from "../../operator/src/server.ts";
import { type FakeOpenAI, startFakeOpenAI } from "../gateway/fake-openai.ts";
import { addResources, emptyView, type RunningGateway, startGateway, uniqueNamespace } from "../gateway/helpers.ts";
import { ensureNamespace, harnessKubeClient, installCrds } from "../ground/kube-client.ts";
import { waitFor } from "../ground/process.ts";
import { create, eventually, startOperatorFor } from "../operator/helpers.ts";
import { selectorsOf, unfiltered, VARIABLES, type Variable, withVariables } from "./dashboard-vars.ts";
import { DASHBOARDS_DIR, type RunningPrometheus, startPrometheus } from "./prometheus.ts";

interface Panel {
  title: string;
  targets: { expr: string }[];
}
interface TemplateVariable {
  name: string;
  type: string;
  includeAll?: boolean;
  multi?: boolean;
  allValue?: string;
}
const dashboards = readdirSync(DASHBOARDS_DIR)
  .filter((f) => f.endsWith(".json"))
  .map((file) => ({
    file,
    ...(JSON.parse(readFileSync(join(DASHBOARDS_DIR, file), "utf8")) as {
      templating: { list: TemplateVariable[] };
      panels: Panel[];
    }),
  }));
const dashboard = (file: string) => dashboards.find((d) => d.file === file) as (typeof dashboards)[number];

const CLUSTER = "east";
const OPERATOR_JOB = "capstan-operator-metrics";
const ns = uniqueNamespace("dash");
const soloNs = uniqueNamespace("dash-solo");
let fake: FakeOpenAI;
let gw: RunningGateway;
const operators: { operator: Operator; app: ReturnType<typeof buildMetricsApp>; address: string }[] = [];
let prom: RunningPrometheus;

async function serve(operator: Operator) {
  await operator.start();
  const app = buildMetricsApp(operator);
  await app.listen({ port: 0, host: "127.0.0.1" });
  operators.push({ operator, app, address: `127.0.0.1:${(app.server.address() as AddressInfo).port}` });
}

beforeAll(async () => {
  fake = await startFakeOpenAI();
  const view = emptyView();
  const keys = addResources(
    view,
    uniqueNamespace("dash-gw"),
    [{ name: "main", agent: "echo" }],
    [{ name: "echo", spec: { provider: { baseURL: fake.baseURL, model: "echo", maxRetries: 0 } } }],
  );
  gw = await startGateway({ redisUrl: inject("redisUrl") }, { view, registry: createRegistry() });
  const chat = (key: string) =>
    gw.app.inject({
      method: "POST",
      url: "/api/v1/chat/completions",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      payload: { model: "m", messages: [{ role: "user", content: "hi" }] },
    });

  const admin = harnessKubeClient();
  await installCrds(admin);
  const expiresAt = new Date(Date.now() + 10 * 86_400_000).toISOString();
  for (const namespace of [ns, soloNs]) {
    await ensureNamespace(admin, namespace);
    await create(admin, {
      apiVersion: "capstan.dev/v1alpha1",
      kind: "Agent",
      metadata: { name: "assistant", namespace },
      spec: {},
    });
    await create(admin, {
      apiVersion: "capstan.dev/v1alpha1",
      kind: "AccessChannel",
      metadata: { name: "expiring", namespace },
      spec: { channelName: "Expiring", agentRef: { name: "assistant" }, expiresAt },
    });
  }
  await create(admin, {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "KnowledgeBase",
    metadata: { name: "handbook", namespace: ns },
    spec: { knowledgeId: "kb_dash" },
  });
  // Two replicas electing a leader, as the chart runs the operator; the first leads.
  for (const id of ["replica-a", "replica-b"]) {
    const operator = startOperatorFor(inject("kubeconfig"), ns, {
      instanceId: id,
      leaderElection: { enabled: true, leaseName: `capstan-${ns}`, namespace: ns },
    });
    await serve(operator);
    if (id === "replica-a") await eventually("replica-a leads", () => operator.isLeader);
  }
  // One operator alone, with no leader election (one replica), in a namespace of its own.
  await serve(startOperatorFor(inject("kubeconfig"), soloNs, { instanceId: "solo" }));

  const [a, b, solo] = operators.map((o) => o.address) as [string, string, string];
  prom = await startPrometheus([
    { job: "capstan-gateway", address: new URL(gw.internalUrl).host, labels: { cluster: CLUSTER } },
    { job: OPERATOR_JOB, address: a, labels: { cluster: CLUSTER } },
    { job: OPERATOR_JOB, address: b, labels: { cluster: CLUSTER } },
    { job: OPERATOR_JOB, address: solo, labels: { cluster: CLUSTER, namespace: "capstan-solo" } },
  ]);
  await prom.waitForTargets();
  // Traffic while Prometheus watches, so the rates have two samples; a 401 for its panel.
  for (let i = 0; i < 4; i++) {
    expect((await chat(keys.main as string)).statusCode).toBe(200);
    expect((await chat(generateKey("chat"))).statusCode).toBe(401);
    await new Promise((r) => setTimeout(r, 1500));
  }
  await waitFor(
    "every operator's key gauge scraped",
    async () =>
      (await values('capstan_operator_keys{kind="AccessChannel",state="valid"}')).reduce((n, s) => n + s.value, 0) ===
      3,
    { timeoutMs: 60_000 },
  );
}, 240_000);

afterAll(async () => {
  await prom?.stop();
  for (const o of operators.reverse()) {
    await o.app.close();
    await o.operator.stop();
  }
  await gw?.close();
  await fake?.close();
});

/** The series of an instant query: labels and value. */
async function values(expr: string): Promise<{ metric: Record<string, string>; value: number }[]> {
  const res = await prom.query(expr);
  expect(res.status, `${expr}: ${res.error}`).toBe("success");
  return (res.data?.result ?? []).map((s) => ({ metric: s.metric, value: Number(s.value?.[1]) }));
}

/** The panels' queries with the variables put in, and how many series each returns. */
async function panelSeries(file: string, vars: Partial<Record<Variable, string>> = {}) {
  const out: { where: string; series: number }[] = [];
  for (const p of dashboard(file).panels) {
    for (const t of p.targets) {
      out.push({ where: `${file}: ${p.title}`, series: (await values(withVariables(t.expr, vars))).length });
    }
  }
  return out;
}

/** The one panel of a dashboard whose query reads `metric`. */
function panelReading(file: string, metric: string): string {
  const found = dashboard(file)
    .panels.flatMap((p) => p.targets.map((t) => t.expr))
    .filter((e) => e.includes(metric));
  expect(found, `${file}: one panel reading ${metric}`).toHaveLength(1);
  return found[0] as string;
}

describe("dashboards: cluster, namespace and job variables", () => {
  it("every dashboard offers the three variables, and every metric selector of every panel filters on them", () => {
    const missing: string[] = [];
    for (const d of dashboards) {
      for (const name of VARIABLES) {
        const v = d.templating.list.find((x) => x.name === name);
        expect(v, `${d.file}: variable ${name}`).toMatchObject({ type: "query", includeAll: true, allValue: ".*" });
      }
      for (const p of d.panels) {
        for (const t of p.targets) {
          const selectors = selectorsOf(t.expr);
          expect(selectors.length, `${d.file}: ${p.title}`).toBeGreaterThan(0);
          for (const s of selectors) {
            for (const v of unfiltered(s)) missing.push(`${d.file}: ${p.title}: ${s.metric} without ${v}`);
          }
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it("shows the gateway's and the operator's panels for their own cluster, namespace and job, and nothing for others", async () => {
    for (const [file, job] of [
      ["gateway.json", "capstan-gateway"],
      ["operator.json", OPERATOR_JOB],
    ] as const) {
      const all = await panelSeries(file);
      const withData = all.filter((p) => p.series > 0).map((p) => p.where);
      expect(withData.length, `${file}: panels with data\n${JSON.stringify(all)}`).toBeGreaterThanOrEqual(
        all.length - 2,
      );
      const own = await panelSeries(file, { cluster: CLUSTER, namespace: "capstan", job });
      expect(own.filter((p) => p.series > 0).map((p) => p.where)).toEqual(withData);
      for (const v of VARIABLES) {
        const other = await panelSeries(file, { [v]: `not-this-${v}` });
        expect(
          other.filter((p) => p.series > 0).map((p) => p.where),
          `${file} with ${v} matching nothing`,
        ).toEqual([]);
      }
    }
  });
});

describe("dashboards: the operator's two replicas", () => {
  it("count each key once, from the leader, although both replicas export it", async () => {
    const raw = await values('sum(capstan_operator_keys{namespace="capstan",kind="AccessChannel",state="valid"})');
    expect(raw[0]?.value).toBe(2);
    const panel = await values(
      withVariables(panelReading("operator.json", "capstan_operator_keys"), { namespace: "capstan" }),
    );
    const valid = panel.find((s) => s.metric.kind === "AccessChannel" && s.metric.state === "valid");
    expect(valid?.value).toBe(1);
  });

  it("count each knowledge base once, on the operator's and the overview's dashboards", async () => {
    const raw = await values('sum(capstan_operator_knowledge_bases{namespace="capstan"})');
    expect(raw[0]?.value).toBe(2);
    for (const file of ["operator.json", "overview.json"]) {
      const panel = await values(
        withVariables(panelReading(file, "capstan_operator_knowledge_bases"), { namespace: "capstan" }),
      );
      expect(
        panel.reduce((n, s) => n + s.value, 0),
        file,
      ).toBe(1);
    }
  });

  it("read the one replica where no leader is elected", async () => {
    const panel = await values(
      withVariables(panelReading("operator.json", "capstan_operator_keys"), { namespace: "capstan-solo" }),
    );
    expect(panel.find((s) => s.metric.kind === "AccessChannel" && s.metric.state === "valid")?.value).toBe(1);
  });
});
