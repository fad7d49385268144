// What the chart tests share: helm template with --set values, the kinds the chart renders (with
// their API paths), and a server-side dry-run apply of a rendered object on the test API server.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { collectionPath } from "@capstan/shared/kube";
import { expect } from "vitest";
import { parseAllDocuments } from "yaml";
import { loadOperatorConfig, type OperatorConfig } from "../../operator/src/config.ts";
import { type HelmResult, helm } from "../ground/helm.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";

export const chart = fileURLToPath(new URL("../../charts/capstan", import.meta.url));

/** The Kubernetes version the test API server runs. */
export const KUBE_VERSION =
  /^require k8s\.io\/kubernetes v(\S+)/m.exec(
    readFileSync(fileURLToPath(new URL("../kube-bin/apiserver/go.mod", import.meta.url)), "utf8"),
  )?.[1] ?? "unknown";

/**
 * The least a user must choose: where Redis is. With neither redis.url nor redis.deploy.enabled
 * the chart refuses to render (tested in chart-values.test.ts).
 */
export const MINIMAL = ["redis.deploy.enabled=true"];

export interface Rendered {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

/** Plural and scope of each kind the chart renders. */
export const KINDS: Record<string, { plural: string; namespaced: boolean }> = {
  ServiceAccount: { plural: "serviceaccounts", namespaced: true },
  ConfigMap: { plural: "configmaps", namespaced: true },
  Service: { plural: "services", namespaced: true },
  Deployment: { plural: "deployments", namespaced: true },
  Role: { plural: "roles", namespaced: true },
  RoleBinding: { plural: "rolebindings", namespaced: true },
  ClusterRole: { plural: "clusterroles", namespaced: false },
  ClusterRoleBinding: { plural: "clusterrolebindings", namespaced: false },
  CustomResourceDefinition: { plural: "customresourcedefinitions", namespaced: false },
  PersistentVolumeClaim: { plural: "persistentvolumeclaims", namespaced: true },
  NetworkPolicy: { plural: "networkpolicies", namespaced: true },
  PodDisruptionBudget: { plural: "poddisruptionbudgets", namespaced: true },
  Ingress: { plural: "ingresses", namespaced: true },
  HTTPRoute: { plural: "httproutes", namespaced: true },
  ValidatingAdmissionPolicy: { plural: "validatingadmissionpolicies", namespaced: false },
  ValidatingAdmissionPolicyBinding: { plural: "validatingadmissionpolicybindings", namespaced: false },
  // The `helm test` Pod (tests.enabled), a test hook.
  Pod: { plural: "pods", namespaced: true },
  // The platform Scraper (scraping.platformScraper), a post-install/post-upgrade hook.
  Scraper: { plural: "scrapers", namespaced: true },
};

export function parseRendered(stdout: string): Rendered[] {
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as Rendered | null)
    .filter((o): o is Rendered => o !== null);
}

/** `helm template` of the chart with --set values (and -f files); the raw result, for failures. */
export function helmTemplate(
  home: string,
  release: string,
  ns: string,
  set: string[],
  files: string[] = [],
): Promise<HelmResult> {
  const args = ["template", release, chart, "--namespace", ns, "--kube-version", KUBE_VERSION];
  return helm([...args, ...files.flatMap((f) => ["-f", f]), ...set.flatMap((s) => ["--set", s])], home);
}

export function pathOf(obj: Rendered, ns: string): string {
  const kind = KINDS[obj.kind];
  if (!kind) throw new Error(`the chart renders a kind this test does not know: ${obj.kind}`);
  const base = collectionPath(
    obj.apiVersion,
    kind.plural,
    kind.namespaced ? (obj.metadata.namespace ?? ns) : undefined,
  );
  return `${base}/${obj.metadata.name}`;
}

/** Server-side apply with dryRun=All: the API server validates and defaults, stores nothing. */
export async function dryRunApply(admin: TestKube, obj: Rendered, ns: string): Promise<void> {
  try {
    await admin.json(pathOf(obj, ns), {
      method: "PATCH",
      contentType: "application/apply-patch+yaml",
      query: { fieldManager: "capstan-chart-test", dryRun: "All", force: "true" },
      body: obj,
    });
  } catch (err) {
    throw new Error(`${obj.kind} ${obj.metadata.name}: ${(err as Error).message}`);
  }
}

/** The one object of a kind (and name, when given). */
export function one(objects: Rendered[], kind: string, name?: string): Rendered {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? ` ${name}` : ""}, found ${found.length}`);
  return found[0] as Rendered;
}

export interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  securityContext?: Record<string, unknown>;
}
export interface PodSpec {
  containers: Container[];
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
  terminationGracePeriodSeconds?: number;
  volumes?: { name: string; persistentVolumeClaim?: { claimName: string } }[];
}
export type Workload = Rendered & {
  spec: { template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
};

export function pod(obj: Rendered): PodSpec {
  return (obj as Workload).spec.template.spec;
}

export function envOf(obj: Rendered, container = 0): Record<string, string | undefined> {
  return Object.fromEntries((pod(obj).containers[container]?.env ?? []).map((e) => [e.name, e.value]));
}

/** One test file's chart renders: its own namespace on the test API server and helm home. */
export class ChartRun {
  readonly ns: string;
  readonly release: string;
  home = "";
  admin!: TestKube;

  constructor(prefix: string) {
    const suffix = `${process.pid}-${Date.now().toString(36)}`;
    this.ns = `${prefix}-${suffix}`;
    this.release = `cap${prefix}-${suffix}`;
  }

  async setup(): Promise<void> {
    this.home = mkdtempSync(join(tmpdir(), "capstan-helm-run-"));
    this.admin = harnessKubeClient();
    await installCrds(this.admin);
    await ensureNamespace(this.admin, this.ns);
  }

  cleanup(): void {
    if (this.home) rmSync(this.home, { recursive: true, force: true });
  }

  async render(set: string[], files: string[] = []): Promise<Rendered[]> {
    const res = await helmTemplate(this.home, this.release, this.ns, set, files);
    expect(res.stderr, `helm template ${set.join(" ")}`).toBe("");
    expect(res.code).toBe(0);
    return parseRendered(res.stdout);
  }

  /** helm template that must fail; its error output. */
  async refused(set: string[]): Promise<string> {
    const res = await helmTemplate(this.home, this.release, this.ns, set);
    expect(res.code, `expected helm template ${set.join(" ")} to fail`).not.toBe(0);
    return res.stderr;
  }

  /** The operator's config as the operator loads it: the ConfigMap's file plus the container's env. */
  operatorConfig(objects: Rendered[]): OperatorConfig {
    const file = join(this.home, `operator-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, one(objects, "ConfigMap").data?.["operator.yaml"] ?? "");
    const env: Record<string, string> = {};
    for (const e of pod(operatorOf(objects)).containers[0]?.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
    // What the pod's mount and downward API would give.
    return loadOperatorConfig({
      ...env,
      CAPSTAN_OPERATOR_CONFIG: file,
      POD_NAME: "operator-0",
      CAPSTAN_NAMESPACE: this.ns,
    });
  }

  apply(obj: Rendered): Promise<void> {
    return dryRunApply(this.admin, obj, this.ns);
  }
}

/** The operator's Deployment among rendered objects. */
export function operatorOf(objects: Rendered[]): Rendered {
  const found = objects.find((o) => o.kind === "Deployment" && o.metadata.name.endsWith("-operator"));
  if (!found) throw new Error("no operator Deployment rendered");
  return found;
}

/** A container's environment as the process sees it: $(VAR) expanded, each Secret's value a stand-in. */
export function containerEnv(c: Container): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of c.env ?? []) {
    if (e.value !== undefined) out[e.name] = e.value.replace(/\$\(([A-Z0-9_]+)\)/g, (m, v) => out[v] ?? m);
    else if ((e.valueFrom as { secretKeyRef?: unknown } | undefined)?.secretKeyRef)
      out[e.name] = "s3cret-0123456789abcdef";
  }
  return out;
}
