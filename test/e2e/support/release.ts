// The tests' side of the release the e2e global setup published (support/publish.ts): they
// install `oci://<registry>/charts/capstan --version <v>` with the images by digest (the
// release's images.yaml), pulled by the kubelet with a pull Secret.
import { inject } from "vitest";
import type { Release } from "./publish.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** What the global setup published to the node's registry. */
    e2eRelease: Release;
  }
}

/** The Secret every namespace whose pods pull from the registry holds (imagePullSecrets). */
export const PULL_SECRET = "capstan-registry-pull";

/** What the tests install: the released chart with its images by digest, from the node's registry. */
export function release(): Release {
  return inject("e2eRelease");
}

/** `helm upgrade --install` arguments naming the released chart and its images (after the release name). */
export function chartArgs(r: Release = release()): string[] {
  return [r.chart, "--version", r.chartVersion, "--ca-file", r.registry.caFile].concat([
    "--registry-config",
    r.registryConfig,
    "-f",
    r.imagesValues,
  ]);
}

/** The pull Secret for `namespace` (type kubernetes.io/dockerconfigjson, as `kubectl create secret docker-registry` makes). */
export function pullSecret(namespace: string, r: Release = release()): object {
  const { host, username, password } = r.registry;
  const auth = Buffer.from(`${username}:${password}`).toString("base64");
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: PULL_SECRET, namespace },
    type: "kubernetes.io/dockerconfigjson",
    stringData: { ".dockerconfigjson": JSON.stringify({ auths: { [host]: { username, password, auth } } }) },
  };
}
