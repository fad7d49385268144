// Test helpers over the shared KubeHttp: a client for the harness API server, CRD install,
// and apply of the YAML files in examples/.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createRegistry } from "@capstan/shared";
import { allCrds } from "@capstan/shared/api";
import { KubeApiError, KubeConfig, kubeConfigFromFile } from "@capstan/shared/kube";
import type { User } from "@kubernetes/client-node";
import { inject } from "vitest";
import { parseAllDocuments } from "yaml";
import { TestKube } from "./test-kube.ts";

export { TestKube };

/** A client of the API server behind an admin kubeconfig file. */
export function kubeHttpFrom(kubeconfig: string): TestKube {
  return new TestKube(kubeConfigFromFile(kubeconfig), createRegistry({ defaultMetrics: false }));
}

/** The server and CA of `base` with another user (a token, an exec plugin), in one context. */
export function kubeConfigAs(base: KubeConfig, user: User, namespace?: string): KubeConfig {
  const cluster = base.getCurrentCluster();
  if (!cluster) throw new Error("kubeconfig: no current cluster");
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [user],
    contexts: [{ name: "test", cluster: cluster.name, user: user.name, ...(namespace ? { namespace } : {}) }],
    currentContext: "test",
  });
  return kc;
}

/** A client of the shared test API server (admin). */
export function harnessKubeClient(): TestKube {
  const path = inject("kubeconfig");
  if (!path)
    throw new Error("the test API server is not running: build it with `bash test/scripts/build-kube-binaries.sh`");
  return kubeHttpFrom(path);
}

/**
 * Applies every generated CRD (server-side apply, so test files that install them at the same time
 * do not conflict as create-then-replace did) and waits until each is Established.
 */
export async function installCrds(client: TestKube): Promise<void> {
  const base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  for (const { crd } of allCrds()) {
    const name = (crd.metadata as { name: string }).name;
    await client.json(`${base}/${name}`, {
      method: "PATCH",
      contentType: "application/apply-patch+yaml",
      query: { fieldManager: "capstan-test-ground", force: "true" },
      body: crd,
    });
  }
  for (const { crd } of allCrds()) {
    const name = (crd.metadata as { name: string }).name;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const got = await client.json<{ status?: { conditions?: { type: string; status: string }[] } }>(
        `${base}/${name}`,
      );
      if (got.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established after 30 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export async function ensureNamespace(client: TestKube, name: string): Promise<void> {
  try {
    await client.json("/api/v1/namespaces", {
      method: "POST",
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
    });
  } catch (err) {
    if (!(err instanceof KubeApiError) || err.status !== 409) throw err;
  }
}

export interface RawObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: unknown;
}

/** The objects of examples/*.yaml exactly as written (no defaults applied). */
export function rawExamples(): RawObject[] {
  const dir = fileURLToPath(new URL("../../examples/", import.meta.url));
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .flatMap((f) => parseAllDocuments(readFileSync(dir + f, "utf8")).map((d) => d.toJS() as RawObject));
}
