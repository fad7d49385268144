// The Kubernetes layer the operator under benchmark talks through, found at run time so that the
// same bench code runs with client-node (`kubeConfigFromFile`: its KubeConfig) and with the
// hand-written layer (`kubeconfigAccess`) for the A/B of bench/operator/ab.sh.
import * as kube from "@capstan/shared/kube";
import type { OperatorDeps } from "../../operator/src/manager.ts";

type Loader = (path: string) => unknown;
const layer = kube as unknown as Record<string, Loader | undefined>;
const fromFile = layer.kubeConfigFromFile;
const legacy = layer.kubeconfigAccess;

/** "client-node" or "hand-written": which layer this tree has. */
export const LAYER = fromFile ? "client-node" : "hand-written";

/**
 * The operator's connection to the API server behind a kubeconfig file. The hand-written layer's
 * KubeHttp takes the loader's KubeAccess where client-node's takes a KubeConfig; an operator of
 * either age finds it under the name it reads.
 */
export function operatorKube(path: string): Pick<OperatorDeps, "kubeConfig"> {
  const loader = fromFile ?? legacy;
  if (!loader) throw new Error("no kubeconfig loader in @capstan/shared/kube");
  const loaded = loader(path);
  return { kubeConfig: loaded, access: loaded } as Pick<OperatorDeps, "kubeConfig">;
}
