// What the search Deployment needs to reach a secured Qdrant, from the operator's qdrant config:
// the API key as a variable from its Secret (Kubernetes resolves it; the operator never reads
// it), and a private CA bundle (a Secret or ConfigMap key) mounted read-only as a file that
// QDRANT_CA_FILE points at. No I/O.
import type { OperatorConfig } from "../config.ts";
import { type EnvVar, env, optionalEnv, secretEnv } from "./common.ts";

export const QDRANT_CA_DIR = "/etc/capstan/qdrant-ca";
const CA_FILE = "ca.crt";

function clusterEnv(name: string, value: number): EnvVar[] {
  return value > 0 ? [env(name, String(value))] : [];
}

export function qdrantSearchSettings(c: OperatorConfig): { env: EnvVar[]; volumes: unknown[]; mounts: unknown[] } {
  const q = c.qdrant;
  const items = (key: string) => [{ key, path: CA_FILE }];
  const volume = q.caSecretRef
    ? { name: "qdrant-ca", secret: { secretName: q.caSecretRef.name, items: items(q.caSecretRef.key) } }
    : q.caConfigMapRef
      ? { name: "qdrant-ca", configMap: { name: q.caConfigMapRef.name, items: items(q.caConfigMapRef.key) } }
      : undefined;
  return {
    env: [
      ...optionalEnv("QDRANT_URL", q.url),
      ...(q.apiKeySecretRef ? [secretEnv("QDRANT_API_KEY", q.apiKeySecretRef)] : []),
      ...(volume ? [env("QDRANT_CA_FILE", `${QDRANT_CA_DIR}/${CA_FILE}`)] : []),
      // How new collections are laid out on a Qdrant cluster; 0 (unset) lets search decide from the peers.
      ...clusterEnv("CAPSTAN_QDRANT_SHARD_NUMBER", q.collection.shardNumber),
      ...clusterEnv("CAPSTAN_QDRANT_REPLICATION_FACTOR", q.collection.replicationFactor),
      ...clusterEnv("CAPSTAN_QDRANT_WRITE_CONSISTENCY_FACTOR", q.collection.writeConsistencyFactor),
    ],
    volumes: volume ? [volume] : [],
    mounts: volume ? [{ name: "qdrant-ca", mountPath: QDRANT_CA_DIR, readOnly: true }] : [],
  };
}
