// CRDs and namespaces on an API server, through the test ground's client: used by the tests
// (through kube-client.ts) and by benchmarks, which run outside vitest and so cannot import
// kube-client.ts (it reads the test ground's kubeconfig with vitest's inject).
import { allCrds } from "@capstan/shared/api";
import { KubeApiError } from "@capstan/shared/kube";
import type { TestKube } from "./test-kube.ts";

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
