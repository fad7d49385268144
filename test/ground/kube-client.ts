// Test helpers over the shared KubeHttp: a client for the harness API server, CRD install,
// and apply of the YAML files in examples/.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createRegistry } from "@capstan/shared";
import { KubeConfig, kubeConfigFromFile } from "@capstan/shared/kube";
import type { User } from "@kubernetes/client-node";
import { inject } from "vitest";
import { parseAllDocuments } from "yaml";
import { ensureNamespace, installCrds } from "./kube-setup.ts";
import { TestKube } from "./test-kube.ts";

export { ensureNamespace, installCrds, TestKube };

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
