// Monitoring on the e2e node as a platform team runs it: the Prometheus Operator (built by
// scripts/setup.d/62-prometheus-operator.sh) as a host process with the cluster's admin
// kubeconfig, its CRDs from the operator's module, and one Prometheus resource that selects the
// chart's ServiceMonitors, PodMonitor and PrometheusRule by their monitoring.labels. The operator
// makes the Prometheus pod (Debian's Prometheus and the config reloader, imported by the global
// setup); the tests read that Prometheus's HTTP API from the host at the pod's address.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import type { TestKube } from "../../ground/kube-client.ts";
import { freePort } from "../../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../../ground/process.ts";
import { apply, eventually, list, type Obj, remove } from "./kube.ts";
import { type MonitoringBuild, monitoringBuild } from "./monitoring-build.ts";

export const MONITORING_NS = "capstan-monitoring";
/** The label the Prometheus selects monitors and rules by (the chart's monitoring.labels). */
export const SELECTOR = { prometheus: "capstan-e2e" };
const NAME = "capstan-e2e";
/** The kinds the Prometheus controller watches; the others' controllers stay off (a warning). */
const CRD_KINDS = ["prometheuses", "servicemonitors", "podmonitors", "probes", "prometheusrules"];
const CRD_BASE = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

export interface Target {
  labels: Record<string, string>;
  scrapePool: string;
  health: string;
  lastError: string;
}
export interface Alert {
  labels: Record<string, string>;
  state: "pending" | "firing";
  activeAt: string;
}

export interface MonitoringStack {
  build: MonitoringBuild;
  /** http://<pod ip>:9090 */
  url: string;
  targets(): Promise<Target[]>;
  alerts(): Promise<Alert[]>;
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  operatorOutput(): string;
  stop(): Promise<void>;
}

/** Server-side apply of the CRDs the Prometheus controller needs, then Established. */
async function installCrds(kube: TestKube, dir: string): Promise<void> {
  const files = readdirSync(dir).filter((f) => CRD_KINDS.some((k) => f === `monitoring.coreos.com_${k}.yaml`));
  if (files.length !== CRD_KINDS.length) throw new Error(`${dir} lacks some of ${CRD_KINDS.join(", ")}`);
  const names: string[] = [];
  for (const f of files) {
    const crd = parse(readFileSync(join(dir, f), "utf8")) as Obj;
    names.push(crd.metadata.name);
    await kube.json(`${CRD_BASE}/${crd.metadata.name}`, {
      method: "PATCH",
      contentType: "application/apply-patch+yaml",
      query: { fieldManager: "capstan-e2e", force: "true" },
      body: crd,
    });
  }
  for (const name of names) {
    await eventually(`CRD ${name} Established`, async () => {
      const got = await kube.json<Obj>(`${CRD_BASE}/${name}`);
      const conditions = (got.status?.conditions ?? []) as { type: string; status: string }[];
      return conditions.some((c) => c.type === "Established" && c.status === "True") ? true : undefined;
    });
  }
}

/** What Prometheus needs to discover and scrape targets in every namespace. */
async function prometheusAccount(kube: TestKube): Promise<void> {
  await apply(kube, { apiVersion: "v1", kind: "Namespace", metadata: { name: MONITORING_NS } });
  await apply(kube, { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: NAME, namespace: MONITORING_NS } });
  await apply(kube, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: NAME },
    ...({
      rules: [
        { apiGroups: [""], resources: ["services", "endpoints", "pods"], verbs: ["get", "list", "watch"] },
        { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["get", "list", "watch"] },
        { nonResourceURLs: ["/metrics"], verbs: ["get"] },
      ],
    } as object),
  });
  await apply(kube, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: NAME },
    ...({
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: NAME },
      subjects: [{ kind: "ServiceAccount", name: NAME, namespace: MONITORING_NS }],
    } as object),
  });
}

/**
 * The operator on the host, CRDs installed, and a Prometheus scraping and evaluating every
 * `intervalSeconds`; resolves when its pod answers.
 */
export async function startMonitoring(
  kube: TestKube,
  kubeconfig: string,
  intervalSeconds = 2,
): Promise<MonitoringStack> {
  const build = monitoringBuild();
  if (typeof build === "string") throw new Error(build);
  const started = Date.now();
  await installCrds(kube, build.crds);
  const port = await freePort();
  const operator: ManagedProcess = startProcess(
    "prometheus-operator",
    build.operator,
    [
      `--prometheus-config-reloader=${build.configReloaderImage}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log-level=info",
    ],
    { ...process.env, KUBECONFIG: kubeconfig },
  );
  await waitFor("prometheus-operator serving", async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).ok, {
    timeoutMs: 60_000,
    proc: operator,
  });
  await prometheusAccount(kube);
  const interval = `${intervalSeconds}s`;
  await kube.json(`/apis/monitoring.coreos.com/v1/namespaces/${MONITORING_NS}/prometheuses/${NAME}`, {
    method: "PATCH",
    contentType: "application/apply-patch+yaml",
    query: { fieldManager: "capstan-e2e", force: "true" },
    body: {
      apiVersion: "monitoring.coreos.com/v1",
      kind: "Prometheus",
      metadata: { name: NAME, namespace: MONITORING_NS },
      spec: {
        image: build.prometheusImage,
        version: build.prometheusVersion,
        replicas: 1,
        serviceAccountName: NAME,
        scrapeInterval: interval,
        evaluationInterval: interval,
        serviceMonitorSelector: { matchLabels: SELECTOR },
        serviceMonitorNamespaceSelector: {},
        podMonitorSelector: { matchLabels: SELECTOR },
        podMonitorNamespaceSelector: {},
        ruleSelector: { matchLabels: SELECTOR },
        ruleNamespaceSelector: {},
        resources: { requests: { cpu: "50m", memory: "128Mi" } },
      },
    },
  });
  const pod = await eventually(
    "the Prometheus pod Ready",
    async () => {
      const pods = await list(kube, "Pod", "v1", MONITORING_NS, `prometheus=${NAME}`);
      const ready = pods.find((p) =>
        ((p.status?.conditions ?? []) as { type: string; status: string }[]).some(
          (c) => c.type === "Ready" && c.status === "True",
        ),
      );
      return ready;
    },
    240_000,
  );
  const url = `http://${pod.status?.podIP as string}:9090`;
  console.log(
    `[e2e] Prometheus Operator ${build.operatorVersion} and Prometheus ${url} up in ${Date.now() - started} ms`,
  );

  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(10_000) });
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== "success") throw new Error(`${path}: ${body.error}`);
    return body.data;
  };
  return {
    build,
    url,
    targets: async () => (await api<{ activeTargets: Target[] }>("/api/v1/targets?state=active")).activeTargets,
    alerts: async () => (await api<{ alerts: Alert[] }>("/api/v1/alerts")).alerts,
    query: async (expr) =>
      (
        await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
          `/api/v1/query?query=${encodeURIComponent(expr)}`,
        )
      ).result,
    operatorOutput: () => operator.output(),
    async stop() {
      // The namespace takes the Prometheus resource and, through its owner references, the pod.
      await remove(kube, "Namespace", "v1", MONITORING_NS);
      await remove(kube, "ClusterRoleBinding", "rbac.authorization.k8s.io/v1", NAME);
      await remove(kube, "ClusterRole", "rbac.authorization.k8s.io/v1", NAME);
      await operator.stop();
    },
  };
}
