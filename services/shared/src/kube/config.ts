// Where and as whom a process talks to the API server, as client-node's KubeConfig: kubeconfig
// files (KUBECONFIG may list several, merged as kubectl does) with their contexts, users with
// client certificates, tokens, `exec` credential plugins (EKS, GKE, AKS, any ExecCredential
// printer) and OIDC, or the in-cluster ServiceAccount (its projected token re-read every minute
// as the kubelet rotates it). The context used is CAPSTAN_KUBE_CONTEXT when set, else the
// kubeconfig's current-context.
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";

export { KubeConfig };

export interface KubeConfigOptions {
  /** A kubeconfig file; default KUBECONFIG, else in-cluster, else ~/.kube/config. */
  kubeconfig?: string | undefined;
  /** The context to use instead of the file's current-context. */
  context?: string | undefined;
}

const SA_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/** Selects a context by name (an unknown name is an error, never a silent fallback). */
function useContext(kc: KubeConfig, context: string | undefined, source: string): KubeConfig {
  if (context) {
    if (!kc.getContextObject(context)) {
      const known = kc.getContexts().map((c) => c.name);
      throw new Error(`${source}: no context "${context}" (contexts: ${known.join(", ") || "none"})`);
    }
    kc.setCurrentContext(context);
  }
  if (!kc.getCurrentCluster()?.server) throw new Error(`${source}: the current context names no cluster with a server`);
  return kc;
}

/** One kubeconfig file, its current context or the one named. */
export function kubeConfigFromFile(path: string, context?: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return useContext(kc, context, `kubeconfig ${path}`);
}

/** The explicit file, else KUBECONFIG (every file it lists), else the in-cluster ServiceAccount, else ~/.kube/config. */
export function loadKubeConfig(opts: KubeConfigOptions = {}, env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const context = opts.context ?? (env.CAPSTAN_KUBE_CONTEXT || undefined);
  if (opts.kubeconfig) return kubeConfigFromFile(opts.kubeconfig, context);
  const kc = new KubeConfig();
  if (env.KUBECONFIG) {
    const files = env.KUBECONFIG.split(":").filter(Boolean);
    kc.loadFromFile(files[0] as string);
    for (const file of files.slice(1)) {
      const more = new KubeConfig();
      more.loadFromFile(file);
      kc.mergeConfig(more, Boolean(kc.currentContext));
    }
    return useContext(kc, context, `KUBECONFIG ${env.KUBECONFIG}`);
  }
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT && existsSync(SA_TOKEN)) {
    kc.loadFromCluster();
    return useContext(kc, context, "in-cluster config");
  }
  const home = join(homedir(), ".kube", "config");
  if (existsSync(home)) return kubeConfigFromFile(home, context);
  throw new Error("no API server: set KUBECONFIG or run in a cluster");
}

/** The namespace of the current context (in-cluster: the ServiceAccount's), if any. */
export function contextNamespace(kc: KubeConfig): string | undefined {
  return kc.getContextObject(kc.getCurrentContext())?.namespace || undefined;
}
