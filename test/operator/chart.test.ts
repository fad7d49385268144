// charts/capstan with real helm (built from the Go module proxy): lint, render, every rendered
// object accepted by the real API server (server-side dry-run apply), the rendered operator
// config loaded by the operator's own schema, and a release installed, upgraded and uninstalled
// on the test API server.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { collectionPath, KubeApiError, type KubeHttp } from "@capstan/shared/kube";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { loadOperatorConfig, type OperatorConfig } from "../../operator/src/config.ts";
import { helm } from "../ground/helm.ts";
import { ensureNamespace, harnessKubeClient, installCrds } from "../ground/kube-client.ts";

const chart = fileURLToPath(new URL("../../charts/capstan", import.meta.url));
const suffix = `${process.pid}-${Date.now().toString(36)}`;
const ns = `chart-${suffix}`;
const release = `cap-${suffix}`;
/** The Kubernetes version the test API server runs. */
const KUBE_VERSION =
  /^require k8s\.io\/kubernetes v(\S+)/m.exec(
    readFileSync(fileURLToPath(new URL("../kube-bin/apiserver/go.mod", import.meta.url)), "utf8"),
  )?.[1] ?? "unknown";

interface Rendered {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

/** Plural and scope of each kind the chart renders. */
const KINDS: Record<string, { plural: string; namespaced: boolean }> = {
  ServiceAccount: { plural: "serviceaccounts", namespaced: true },
  ConfigMap: { plural: "configmaps", namespaced: true },
  Service: { plural: "services", namespaced: true },
  Deployment: { plural: "deployments", namespaced: true },
  Role: { plural: "roles", namespaced: true },
  RoleBinding: { plural: "rolebindings", namespaced: true },
  ClusterRole: { plural: "clusterroles", namespaced: false },
  ClusterRoleBinding: { plural: "clusterrolebindings", namespaced: false },
  CustomResourceDefinition: { plural: "customresourcedefinitions", namespaced: false },
};

let home: string;
let admin: KubeHttp;
let kubeconfig: string;
/** The chart rendered with its default values (rendered once; the tests only read it). */
let rendered: Rendered[];

async function template(...set: string[]): Promise<Rendered[]> {
  const args = ["template", release, chart, "--namespace", ns, "--kube-version", KUBE_VERSION];
  const res = await helm([...args, ...set.flatMap((s) => ["--set", s])], home);
  expect(res.stderr).toBe("");
  expect(res.code).toBe(0);
  return parseAllDocuments(res.stdout)
    .map((d) => d.toJS() as Rendered | null)
    .filter((o): o is Rendered => o !== null);
}

function pathOf(obj: Rendered): string {
  const kind = KINDS[obj.kind];
  if (!kind) throw new Error(`the chart renders a kind this test does not know: ${obj.kind}`);
  const base = collectionPath(
    obj.apiVersion,
    kind.plural,
    kind.namespaced ? (obj.metadata.namespace ?? ns) : undefined,
  );
  return `${base}/${obj.metadata.name}`;
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
    const res = await helm(["lint", "--strict", chart, "--kube-version", KUBE_VERSION], home);
    expect(res.stdout).toContain("0 chart(s) failed");
    expect(res.code).toBe(0);
  });

  it("renders objects the API server accepts (server-side apply, dry run)", async () => {
    const objects = rendered;
    expect(new Set(objects.map((o) => o.kind))).toEqual(new Set(Object.keys(KINDS)));
    expect(objects.filter((o) => o.kind === "CustomResourceDefinition")).toHaveLength(5);
    for (const obj of objects) {
      try {
        await admin.json(pathOf(obj), {
          method: "PATCH",
          contentType: "application/apply-patch+yaml",
          query: { fieldManager: "capstan-chart-test", dryRun: "All", force: "true" },
          body: obj,
        });
      } catch (err) {
        throw new Error(`${obj.kind} ${obj.metadata.name}: ${(err as Error).message}`);
      }
    }
  });

  it("renders an operator config the operator loads, equal to the operator's defaults", async () => {
    const objects = rendered;
    const configMap = objects.find((o) => o.kind === "ConfigMap");
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
    const comparable = (c: OperatorConfig) => ({
      ...c,
      namespace: "",
      dataPlaneServiceAccount: "",
      leaderElection: { ...c.leaderElection, leaseName: "" },
      gateway: { ...c.gateway, resources: {} },
      search: { ...c.search, resources: {} },
      scraper: { ...c.scraper, resources: {}, renderResources: {} },
    });
    expect(comparable(fromChart)).toEqual(comparable(defaults));
  });

  it("installs, upgrades and uninstalls a release on the API server", async () => {
    const kc = ["--kubeconfig", kubeconfig, "-n", ns];
    const install = await helm(["install", release, chart, ...kc, "--set", "installCRDs=false"], home);
    expect(install.stderr).toBe("");
    expect(install.code).toBe(0);
    const deployment = rendered.find((o) => o.kind === "Deployment") as Rendered;
    const get = () => admin.json<{ spec: { replicas: number } }>(pathOf(deployment));
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
