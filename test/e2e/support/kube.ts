// What the end-to-end tests ask of the node's API server: apply, read, wait for, delete. Thin
// helpers over the shared TestKube, authenticated with the admin kubeconfig of the e2e cluster.
import { collectionPath, KubeApiError } from "@capstan/shared/kube";
import { inject } from "vitest";
import { kubeHttpFrom, type TestKube } from "../../ground/kube-client.ts";
import type { Obj } from "../../operator/helpers.ts";

/** The shape of an API object the tests read and write (shared with the operator's tests). */
export type { Obj } from "../../operator/helpers.ts";

/** Plural of each kind the e2e tests touch (the path of an object needs it). */
const PLURALS: Record<string, string> = {
  Namespace: "namespaces",
  Secret: "secrets",
  Service: "services",
  Pod: "pods",
  ConfigMap: "configmaps",
  PersistentVolume: "persistentvolumes",
  PersistentVolumeClaim: "persistentvolumeclaims",
  Deployment: "deployments",
  EndpointSlice: "endpointslices",
  AccessChannel: "accesschannels",
  Agent: "agents",
  SearchKey: "searchkeys",
  KnowledgeBase: "knowledgebases",
  Scraper: "scrapers",
  ServiceAccount: "serviceaccounts",
  ClusterRole: "clusterroles",
  ClusterRoleBinding: "clusterrolebindings",
  Lease: "leases",
  Node: "nodes",
};
const CLUSTER_SCOPED = new Set(["Namespace", "PersistentVolume", "ClusterRole", "ClusterRoleBinding", "Node"]);

export function e2eKube(): TestKube {
  const path = inject("e2eKubeconfig");
  if (!path) throw new Error("the e2e cluster is not running (see test/e2e/global-setup.ts)");
  return kubeHttpFrom(path);
}

export function pathOf(kind: string, apiVersion: string, name?: string, namespace?: string): string {
  const plural = PLURALS[kind];
  if (!plural) throw new Error(`e2e helpers do not know kind ${kind}`);
  const base = collectionPath(apiVersion, plural, CLUSTER_SCOPED.has(kind) ? undefined : namespace);
  return name ? `${base}/${name}` : base;
}

/** Server-side apply under the test's own field manager. */
export async function apply(kube: TestKube, obj: Obj): Promise<Obj> {
  return kube.json<Obj>(pathOf(obj.kind, obj.apiVersion, obj.metadata.name, obj.metadata.namespace), {
    method: "PATCH",
    contentType: "application/apply-patch+yaml",
    query: { fieldManager: "capstan-e2e", force: "true" },
    body: obj,
  });
}

/** A JSON merge patch (what `kubectl edit` amounts to for a field or two). */
export async function mergePatch(kube: TestKube, ref: Obj, patch: unknown): Promise<Obj> {
  return kube.json<Obj>(pathOf(ref.kind, ref.apiVersion, ref.metadata.name, ref.metadata.namespace), {
    method: "PATCH",
    contentType: "application/merge-patch+json",
    body: patch,
  });
}

export async function get(
  kube: TestKube,
  kind: string,
  apiVersion: string,
  name: string,
  namespace?: string,
): Promise<Obj | undefined> {
  try {
    return await kube.json<Obj>(pathOf(kind, apiVersion, name, namespace));
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return undefined;
    throw err;
  }
}

export async function list(
  kube: TestKube,
  kind: string,
  apiVersion: string,
  namespace?: string,
  labelSelector?: string,
): Promise<Obj[]> {
  const res = await kube.json<{ items: Obj[] }>(pathOf(kind, apiVersion, undefined, namespace), {
    query: labelSelector ? { labelSelector } : {},
  });
  return res.items;
}

export async function remove(kube: TestKube, kind: string, apiVersion: string, name: string, namespace?: string) {
  try {
    await kube.json(pathOf(kind, apiVersion, name, namespace), {
      method: "DELETE",
      body: { kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background" },
    });
  } catch (err) {
    if (!(err instanceof KubeApiError) || err.status !== 404) throw err;
  }
}

/** Polls `check` until it returns a value (not undefined), or fails with what it last saw. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 180_000,
  everyMs = 1_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`${what}: not reached in ${timeoutMs / 1000} s${last ? ` (last error: ${String(last)})` : ""}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A Deployment whose every replica is updated and Ready by its readiness probe. */
export async function deploymentReady(kube: TestKube, namespace: string, name: string, timeoutMs = 240_000) {
  return eventually(
    `Deployment ${namespace}/${name} Ready`,
    async () => {
      const d = await get(kube, "Deployment", "apps/v1", name, namespace);
      const want = (d?.spec?.replicas as number | undefined) ?? 1;
      const s = (d?.status ?? {}) as Record<string, number>;
      const current = (s.observedGeneration ?? 0) >= (d?.metadata.generation ?? 1);
      const ok = current && s.readyReplicas === want && s.updatedReplicas === want && s.replicas === want;
      return ok ? d : undefined;
    },
    timeoutMs,
  );
}

/** The value of one key of a Secret, decoded. */
export async function secretValue(kube: TestKube, namespace: string, name: string, key: string): Promise<string> {
  const secret = await get(kube, "Secret", "v1", name, namespace);
  const data = secret?.data?.[key];
  if (!data) throw new Error(`Secret ${namespace}/${name} has no key ${key}`);
  return Buffer.from(data, "base64").toString("utf8");
}

/** A condition of an object's status. */
export function condition(obj: Obj | undefined, type: string): { status: string; reason?: string } | undefined {
  const conditions = (obj?.status?.conditions ?? []) as { type: string; status: string; reason?: string }[];
  return conditions.find((c) => c.type === type);
}
