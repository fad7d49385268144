// charts/capstan with real helm (built from the Go module proxy): lint, render, every rendered
// object accepted by the real API server (server-side dry-run apply), the rendered operator
// config loaded by the operator's own schema, and a release installed, upgraded and uninstalled
// on the test API server.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeApiError } from "@capstan/shared/kube";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parse } from "yaml";
import { loadOperatorConfig, type OperatorConfig } from "../../operator/src/config.ts";
import { helm } from "../ground/helm.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import {
  chart,
  dryRunApply,
  helmTemplate,
  KINDS,
  KUBE_VERSION,
  MINIMAL,
  one,
  parseRendered,
  pathOf,
  type Rendered,
} from "./chart-kit.ts";

const suffix = `${process.pid}-${Date.now().toString(36)}`;
const ns = `chart-${suffix}`;
const release = `cap-${suffix}`;

let home: string;
let admin: TestKube;
let kubeconfig: string;
/** The chart rendered with its default values plus MINIMAL (rendered once; the tests only read it). */
let rendered: Rendered[];

async function template(...set: string[]): Promise<Rendered[]> {
  const res = await helmTemplate(home, release, ns, [...MINIMAL, ...set]);
  expect(res.stderr).toBe("");
  expect(res.code).toBe(0);
  return parseRendered(res.stdout);
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "capstan-helm-"));
  kubeconfig = inject("kubeconfig");
  admin = harnessKubeClient();
  await installCrds(admin);
  await ensureNamespace(admin, ns);
  rendered = await template();
});

afterAll(async () => {
  if (kubeconfig) await helm(["uninstall", release, "-n", ns, "--kubeconfig", kubeconfig], home).catch(() => {});
  if (home) rmSync(home, { recursive: true, force: true });
});

describe("charts/capstan with helm", () => {
  it("lints clean with --strict", async () => {
    const set = MINIMAL.flatMap((v) => ["--set", v]);
    const res = await helm(["lint", "--strict", chart, "--kube-version", KUBE_VERSION, ...set], home);
    expect(res.stdout).toContain("0 chart(s) failed");
    expect(res.code).toBe(0);
  });

  it("renders objects the API server accepts (server-side apply, dry run)", async () => {
    const objects = rendered;
    // Off by default: the Ingress and the HTTPRoute (chart-values.test.ts renders them).
    const optional = new Set(["Ingress", "HTTPRoute"]);
    expect(new Set(objects.map((o) => o.kind))).toEqual(new Set(Object.keys(KINDS).filter((k) => !optional.has(k))));
    expect(objects.filter((o) => o.kind === "CustomResourceDefinition")).toHaveLength(5);
    for (const obj of objects) await dryRunApply(admin, obj, ns);
  });

  it("renders an operator config the operator loads, equal to the operator's defaults", async () => {
    const objects = rendered;
    const configMap = one(objects, "ConfigMap");
    const file = join(home, "operator.yaml");
    writeFileSync(file, configMap?.data?.["operator.yaml"] ?? "");
    const fromChart = loadOperatorConfig({ CAPSTAN_OPERATOR_CONFIG: file, POD_NAME: "operator-0" });
    const defaults = loadOperatorConfig({ POD_NAME: "operator-0" });
    expect(fromChart.namespace).toBe(ns);
    // The chart gives the data plane resource requests and limits (values.yaml); the operator's
    // built-in defaults have none. The release decides its namespace and names. The rest is the
    // operator's own default.
    const values = parse(readFileSync(join(chart, "values.yaml"), "utf8"));
    expect(fromChart.gateway.resources).toEqual(values.gateway.resources);
    expect(fromChart.search.resources).toEqual(values.search.resources);
    expect(fromChart.scraper.resources).toEqual(values.scraper.resources);
    expect(fromChart.scraper.renderResources).toEqual(values.scraper.renderResources);
    // Also the release's own: the dev Redis' address and search's claim.
    expect(fromChart.redis.url).toBe(`redis://capstan-redis.${ns}.svc:6379`);
    expect(fromChart.search.persistence.claimName).toBe("capstan-search-data");
    expect(fromChart.ownerConfigMap).toBe(configMap.metadata.name);
    const comparable = (c: OperatorConfig) => ({
      ...c,
      namespace: "",
      dataPlaneServiceAccount: "",
      ownerConfigMap: "",
      leaderElection: { ...c.leaderElection, leaseName: "" },
      gateway: { ...c.gateway, resources: {} },
      search: { ...c.search, resources: {}, persistence: {} },
      scraper: { ...c.scraper, resources: {}, renderResources: {} },
      redis: {},
    });
    expect(comparable(fromChart)).toEqual(comparable(defaults));
  });

  it("renders the console unless disabled: a Deployment, a Service and a ServiceAccount that may only list EndpointSlices", async () => {
    const name = `${release}-capstan-console`;
    const off = await template("console.enabled=false");
    expect(off.filter((o) => o.metadata.name.startsWith(name))).toEqual([]);
    const objects = await template("networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=obs");
    const ours = objects.filter((o) => o.metadata.name === name);
    const replicasRole = `${name}-gateway-replicas`;
    const rbac = objects.filter((o) => o.metadata.name === replicasRole);
    expect(ours.map((o) => o.kind).sort()).toEqual(["Deployment", "NetworkPolicy", "Service", "ServiceAccount"]);
    expect(rbac.map((o) => o.kind).sort()).toEqual(["Role", "RoleBinding"]);
    for (const obj of [...ours, ...rbac]) await dryRunApply(admin, obj, ns);
    // One right of its own, for the usage page: listing EndpointSlices in the release namespace
    // (users act with their own tokens). No other binding names its ServiceAccount.
    expect((one(rbac, "Role", replicasRole) as Rendered & { rules: unknown }).rules).toEqual([
      { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list"] },
    ]);
    expect(one(rbac, "Role", replicasRole).metadata.namespace).toBe(ns);
    const bindings = objects.filter((o) => o.kind === "RoleBinding" || o.kind === "ClusterRoleBinding");
    const naming = bindings.filter((b) => JSON.stringify(b).includes(`"name":"${name}"`));
    expect(naming.map((b) => `${b.kind}/${b.metadata.name}`)).toEqual([`RoleBinding/${replicasRole}`]);
    const deployment = one(ours, "Deployment", name) as Rendered & {
      spec: { template: { spec: { serviceAccountName: string; containers: Record<string, unknown>[] } } };
    };
    const pod = deployment.spec.template.spec;
    expect(pod.serviceAccountName).toBe(name);
    const container = pod.containers[0] as {
      image: string;
      env: { name: string; value?: string }[];
      ports: { name: string; containerPort: number }[];
      readinessProbe: { httpGet: { path: string; port: string } };
      livenessProbe: { httpGet: { path: string; port: string } };
    };
    expect(container.image).toMatch(/\/console:/);
    // The page on http; metrics and health on the internal port, which the probes ask.
    expect(container.ports).toEqual([
      { name: "http", containerPort: 8097 },
      { name: "internal", containerPort: 8098 },
    ]);
    expect(container.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "internal" });
    expect(container.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "internal" });
    const service = one(ours, "Service", name) as Rendered & { spec: { ports: { name: string; port: number }[] } };
    expect(service.spec.ports.map((p) => [p.name, p.port])).toEqual([
      ["http", 80],
      ["internal", 8098],
    ]);
    const env = Object.fromEntries(container.env.map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      PORT: "8097",
      CAPSTAN_INTERNAL_PORT: "8098",
      CAPSTAN_CONSOLE_SIGN_IN_PER_MINUTE: "10",
      CAPSTAN_CONSOLE_SECURE_COOKIES: "true",
      CAPSTAN_CONSOLE_DEFAULT_NAMESPACE: ns,
      CAPSTAN_SEARCH_URL: `http://capstan-search.${ns}.svc:80`,
      CAPSTAN_GATEWAY_URL: `http://capstan-gateway.${ns}.svc:80`,
      // Every gateway replica, found through the gateway Service's EndpointSlices.
      CAPSTAN_GATEWAY_METRICS_SERVICE: `${ns}/capstan-gateway`,
    });
    expect(env).not.toHaveProperty("CAPSTAN_GATEWAY_METRICS_URLS");
    // Two replicas sharing their sessions in the data plane's Redis, which admits them.
    expect((deployment.spec as { replicas?: number }).replicas).toBe(2);
    expect(env.REDIS_URL).toBe(`redis://capstan-redis.${ns}.svc:6379`);
    expect(JSON.stringify(one(objects, "NetworkPolicy", "capstan-redis").spec)).toContain("capstan-console");
    // A whole host of its own through the Ingress, when named.
    const routed = await template("ingress.enabled=true", "console.hosts[0]=console.example.com");
    const rules = (one(routed, "Ingress", `${release}-capstan`).spec as { rules: { host?: string; http: unknown }[] })
      .rules;
    expect(rules.find((r) => r.host === "console.example.com")?.http).toEqual({
      paths: [{ path: "/", pathType: "Prefix", backend: { service: { name, port: { number: 80 } } } }],
    });
    // With a Prometheus, the usage page reads it and the ServiceAccount has no right at all.
    const withProm = await template(
      "console.enabled=true",
      "console.prometheus.url=http://prometheus-operated.monitoring:9090",
    );
    expect(withProm.filter((o) => o.metadata.name === replicasRole)).toEqual([]);
    const promEnv = Object.fromEntries(
      (
        one(withProm, "Deployment", name) as Rendered & {
          spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
        }
      ).spec.template.spec.containers[0]?.env.map((e) => [e.name, e.value]) ?? [],
    );
    expect(promEnv).toMatchObject({
      CAPSTAN_CONSOLE_PROMETHEUS_URL: "http://prometheus-operated.monitoring:9090",
      CAPSTAN_CONSOLE_PROMETHEUS_SELECTOR: `job="capstan-gateway",namespace="${ns}"`,
    });
    expect(promEnv).not.toHaveProperty("CAPSTAN_GATEWAY_METRICS_SERVICE");
    // With the gateway's metrics port limited to metricsFrom, the console is let in too.
    const gatewayPolicy = one(objects, "NetworkPolicy", "capstan-gateway");
    expect(JSON.stringify(gatewayPolicy.spec)).toContain("capstan-console");
    // The schema refuses what the console would refuse at start.
    const bad = await helmTemplate(home, release, ns, [
      ...MINIMAL,
      "console.enabled=true",
      "console.idleTimeoutSeconds=5",
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/idleTimeoutSeconds/);
  });

  it("installs, upgrades and uninstalls a release on the API server", async () => {
    const kc = ["--kubeconfig", kubeconfig, "-n", ns];
    // The reference policy is cluster-scoped: bound to this namespace only, so that other test
    // files' users are not checked by this release's policy while it is installed; the operator
    // watches this namespace only, so that chart-releases.test.ts's releases may coexist with it.
    const set = [
      ...MINIMAL,
      `admission.namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=${ns}`,
      `operator.watchNamespaces[0]=${ns}`,
    ].flatMap((v) => ["--set", v]);
    const install = await helm(["install", release, chart, ...kc, "--set", "installCRDs=false", ...set], home);
    expect(install.stderr).toBe("");
    expect(install.code).toBe(0);
    const deployment = one(rendered, "Deployment", `${release}-capstan-operator`);
    const get = () => admin.json<{ spec: { replicas: number } }>(pathOf(deployment, ns));
    const replicas = parse(readFileSync(join(chart, "values.yaml"), "utf8")).operator.replicas as number;
    expect((await get()).spec.replicas).toBe(replicas);

    const upgrade = await helm(
      ["upgrade", release, chart, ...kc, "--reuse-values", "--set", `operator.replicas=${replicas + 1}`],
      home,
    );
    expect(upgrade.code).toBe(0);
    expect((await get()).spec.replicas).toBe(replicas + 1);

    const uninstall = await helm(["uninstall", release, ...kc], home);
    expect(uninstall.code).toBe(0);
    const gone = await get().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(gone).toBeInstanceOf(KubeApiError);
    expect((gone as KubeApiError).status).toBe(404);
  });
});
