// The Kubernetes layer the benchmark talks through, found at run time so that the same bench code
// runs on this tree (client-node's KubeConfig) and on the tree before it (the hand-written
// kubeconfig loader, `kubeconfigAccess`) for the A/B of bench/operator/ab.sh.
import type { Registry } from "@capstan/shared";
import * as kube from "@capstan/shared/kube";
import type { OperatorDeps } from "../../operator/src/manager.ts";

type Loader = (path: string) => unknown;
const layer = kube as unknown as Record<string, Loader | undefined>;
const fromFile = layer.kubeConfigFromFile;
const legacy = layer.kubeconfigAccess;

/** "client-node" or "hand-written": which layer this tree has. */
export const LAYER = fromFile ? "client-node" : "hand-written";

function load(path: string): unknown {
  const loader = fromFile ?? legacy;
  if (!loader) throw new Error("no kubeconfig loader in @capstan/shared/kube");
  return loader(path);
}

/** The operator's connection to the API server behind a kubeconfig file. */
export function operatorKube(path: string): Pick<OperatorDeps, "kubeConfig"> {
  return (fromFile ? { kubeConfig: load(path) } : { access: load(path) }) as Pick<OperatorDeps, "kubeConfig">;
}

/** A pooled client for the driver that creates the objects. */
export function driverClient(path: string, registry: Registry): kube.KubeHttp {
  const Http = kube.KubeHttp as unknown as new (c: unknown, r: Registry) => kube.KubeHttp;
  return new Http(load(path), registry);
}
