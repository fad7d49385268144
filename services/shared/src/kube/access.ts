// How to reach the API server: a kubeconfig file (current context; CA, client certificate and
// key, bearer token or token file, inline or as files) or the in-cluster ServiceAccount (token
// re-read as the kubelet rotates it). A small loader of its own rather than client-node's
// KubeConfig, whose module graph alone costs ~80 MB of RSS. Exec and OIDC auth plugins are not
// supported: the operator runs in-cluster.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { parse } from "yaml";

export interface KubeAccess {
  server: string;
  ca?: Buffer | undefined;
  cert?: Buffer | undefined;
  key?: Buffer | undefined;
  insecureSkipTlsVerify?: boolean;
  /** The bearer token, read on each call (it may rotate). */
  token?: (() => string | undefined) | undefined;
  basic?: { username: string; password: string } | undefined;
  namespace?: string | undefined;
}

/** A token file, re-read at most once a minute (the kubelet rotates projected tokens). */
function cachedFile(path: string): () => string {
  let value = "";
  let until = 0;
  return () => {
    if (Date.now() >= until) {
      value = readFileSync(path, "utf8").trim();
      until = Date.now() + 60_000;
    }
    return value;
  };
}

const SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

export function inClusterAccess(env: NodeJS.ProcessEnv = process.env): KubeAccess | undefined {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port || !existsSync(`${SA_DIR}/token`)) return undefined;
  const h = host.includes(":") ? `[${host}]` : host;
  return {
    server: `https://${h}:${port}`,
    ca: readFileSync(`${SA_DIR}/ca.crt`),
    token: cachedFile(`${SA_DIR}/token`),
    namespace: existsSync(`${SA_DIR}/namespace`) ? readFileSync(`${SA_DIR}/namespace`, "utf8").trim() : undefined,
  };
}

interface Named<T> {
  name: string;
  [k: string]: unknown;
  cluster?: T;
  user?: T;
  context?: T;
}

type Dict = Record<string, string | boolean | undefined>;

function material(base: string, inline: unknown, file: unknown): Buffer | undefined {
  if (typeof inline === "string" && inline) return Buffer.from(inline, "base64");
  if (typeof file === "string" && file) return readFileSync(isAbsolute(file) ? file : join(base, file));
  return undefined;
}

export function kubeconfigAccess(path: string): KubeAccess {
  const doc = parse(readFileSync(path, "utf8")) as {
    "current-context"?: string;
    contexts?: Named<Dict>[];
    clusters?: Named<Dict>[];
    users?: Named<Dict>[];
  };
  const base = dirname(path);
  const ctx = doc.contexts?.find((c) => c.name === doc["current-context"])?.context ?? doc.contexts?.[0]?.context;
  if (!ctx) throw new Error(`kubeconfig ${path}: no current context`);
  const cluster = doc.clusters?.find((c) => c.name === ctx.cluster)?.cluster;
  if (!cluster?.server) throw new Error(`kubeconfig ${path}: cluster ${String(ctx.cluster)} has no server`);
  const user = doc.users?.find((u) => u.name === ctx.user)?.user ?? {};
  const token = typeof user.token === "string" ? user.token : undefined;
  const tokenFile = typeof user.tokenFile === "string" ? user.tokenFile : undefined;
  return {
    server: String(cluster.server),
    ca: material(base, cluster["certificate-authority-data"], cluster["certificate-authority"]),
    cert: material(base, user["client-certificate-data"], user["client-certificate"]),
    key: material(base, user["client-key-data"], user["client-key"]),
    insecureSkipTlsVerify: cluster["insecure-skip-tls-verify"] === true,
    token: token ? () => token : tokenFile ? cachedFile(tokenFile) : undefined,
    basic:
      typeof user.username === "string" && typeof user.password === "string"
        ? { username: user.username, password: user.password }
        : undefined,
    namespace: typeof ctx.namespace === "string" ? ctx.namespace : undefined,
  };
}

/** KUBECONFIG (first file), else the in-cluster ServiceAccount, else ~/.kube/config. */
export function loadKubeAccess(env: NodeJS.ProcessEnv = process.env): KubeAccess {
  const file = env.KUBECONFIG?.split(":")[0];
  if (file) return kubeconfigAccess(file);
  const inCluster = inClusterAccess(env);
  if (inCluster) return inCluster;
  const home = join(homedir(), ".kube", "config");
  if (existsSync(home)) return kubeconfigAccess(home);
  throw new Error("no API server: set KUBECONFIG or run in a cluster");
}
