// Pure translation of the operator's config into the shared data plane: the gateway and search
// Deployments and Services, the internal-token Secret's shape and the provider-key mirror. No I/O.

import type { KubeObject, OwnerReference } from "@capstan/shared/kube";
import {
  dataPlaneNamespace,
  GATEWAY_NAME,
  type OperatorConfig,
  SEARCH_NAME,
  searchInternalServiceUrl,
} from "../config.ts";
import {
  CONFIG_HASH,
  CONTAINER_SECURITY,
  type EnvVar,
  env,
  extraEnv,
  k8sEnv,
  optionalEnv,
  otelEnv,
  PART_OF,
  POD_SECURITY,
  podPlacement,
  probe,
  READINESS_PERIOD_SECONDS,
  scrapeAnnotations,
  secretEnv,
  shortHash,
  withAppliedHash,
} from "./common.ts";
import { qdrantSearchSettings } from "./qdrant.ts";

export const PROVIDER_KEYS_SECRET = "capstan-provider-keys";
export const INTERNAL_TOKEN_KEY = "token";
/** The data key of the key-verifier Secret (the HMAC key of user-supplied keys). */
export const KEY_VERIFIER_KEY = "key";
/** A stopping search pod serves this long before SIGTERM: endpoints and the ingress catch up first. */
const SEARCH_PRESTOP_SLEEP_SECONDS = 5;

/** A provider key an Agent references, mirrored into the gateway's namespace. */
export interface ProviderKeyRef {
  namespace: string;
  secret: string;
  key: string;
}

/** Data key of a mirrored provider key: a hash, since names may contain dots. */
export function mirrorKey(ref: ProviderKeyRef): string {
  return `pk-${shortHash([ref.namespace, ref.secret, ref.key], 24)}`;
}

function labels(component: string, name: string): Record<string, string> {
  return { ...PART_OF, "app.kubernetes.io/name": name, "app.kubernetes.io/component": component };
}

function selector(name: string): Record<string, string> {
  return { "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "capstan" };
}

/** ownerReferences of a data-plane object: the chart's ConfigMap when the operator knows it. */
function owned(owner: OwnerReference | undefined): { ownerReferences?: OwnerReference[] } {
  return owner ? { ownerReferences: [owner] } : {};
}

function service(
  name: string,
  component: string,
  c: OperatorConfig,
  port: number,
  internalPort: number,
  owner?: OwnerReference,
): KubeObject {
  // The internal port (metrics, health; search's documents API) keeps its number on the Service,
  // where the chart's NetworkPolicy keeps it inside the cluster; the Ingress routes to "http" only.
  const ports = [
    { name: "http", port, targetPort: "http", protocol: "TCP" },
    { name: "internal", port: internalPort, targetPort: "internal", protocol: "TCP" },
  ];
  return withAppliedHash({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: c.namespace, labels: labels(component, name), ...owned(owner) },
    spec: {
      type: "ClusterIP",
      selector: selector(name),
      ports,
    },
  });
}

/** What the gateway's and search's settings share (config.ts workloadFields, internalPort). */
type WorkloadSettings = OperatorConfig["gateway"] | OperatorConfig["search"];

/** One of the shared data plane's workloads (gateway, search): its settings and what is its own. */
interface DataPlaneWorkload {
  name: string;
  component: string;
  settings: WorkloadSettings;
  /** The workload's own env, after PORT and CAPSTAN_INTERNAL_PORT, before the OTel and extra env. */
  env: EnvVar[];
  volumes: unknown[];
  mounts: unknown[];
  /** Recreate when two pods must never share the data (the embedded store); else rolling. */
  strategy: "RollingUpdate" | "Recreate";
  /**
   * Seconds a stopping pod keeps serving before its process gets SIGTERM (a preStop sleep), for a
   * process that stops listening at once: the Service's endpoints and the ingress controller take
   * a few seconds to stop sending it requests, which would otherwise be refused or hang.
   */
  preStopSleepSeconds?: number;
}

/** A data-plane workload's Deployment and its Service. */
function dataPlaneObjects(c: OperatorConfig, w: DataPlaneWorkload, owner: OwnerReference | undefined): KubeObject[] {
  const s = w.settings;
  return [deployment(c, w, owner), service(w.name, w.component, c, s.servicePort, s.internalPort, owner)];
}

function deployment(c: OperatorConfig, w: DataPlaneWorkload, owner: OwnerReference | undefined): KubeObject {
  const s = w.settings;
  // The internal port (the second container port) serves metrics and health; the probes go there.
  const containerEnv = [
    env("PORT", s.port),
    env("CAPSTAN_INTERNAL_PORT", s.internalPort),
    ...w.env,
    ...otelEnv(c.otel, w.name),
    ...extraEnv(s.extraEnv),
  ];
  // Where an annotation-driven Prometheus finds the metrics (the pod's own annotations win).
  const annotations = { ...scrapeAnnotations(s.internalPort), ...s.podAnnotations };
  const template = {
    metadata: { labels: labels(w.component, w.name), annotations },
    spec: {
      serviceAccountName: c.dataPlaneServiceAccount,
      automountServiceAccountToken: true,
      securityContext: POD_SECURITY,
      ...podPlacement(s),
      containers: [
        {
          name: w.component,
          image: s.image,
          imagePullPolicy: s.imagePullPolicy,
          ports: [
            { name: "http", containerPort: s.port, protocol: "TCP" },
            { name: "internal", containerPort: s.internalPort, protocol: "TCP" },
          ],
          env: [...k8sEnv(w.name, w.component), ...containerEnv],
          resources: s.resources,
          livenessProbe: probe("/healthz", "internal"),
          readinessProbe: probe("/readyz", "internal", READINESS_PERIOD_SECONDS),
          ...(w.preStopSleepSeconds ? { lifecycle: { preStop: { sleep: { seconds: w.preStopSleepSeconds } } } } : {}),
          securityContext: CONTAINER_SECURITY,
          volumeMounts: [{ name: "tmp", mountPath: "/tmp" }, ...w.mounts],
        },
      ],
      volumes: [{ name: "tmp", emptyDir: {} }, ...w.volumes],
    },
  };
  // The config hash on the pod template rolls the pods when anything they run with changes.
  const configHash = shortHash(template);
  return withAppliedHash({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: w.name, namespace: c.namespace, labels: labels(w.component, w.name), ...owned(owner) },
    spec: {
      replicas: s.replicas,
      selector: { matchLabels: selector(w.name) },
      strategy:
        w.strategy === "Recreate"
          ? { type: "Recreate" }
          : { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        ...template,
        metadata: { ...template.metadata, annotations: { ...annotations, [CONFIG_HASH]: configHash } },
      },
    },
  });
}

/**
 * Where the data plane's Redis is. Standalone: REDIS_URL, with the password (when a Secret holds
 * one) put in by Kubernetes' $(VAR) expansion of the REDIS_PASSWORD variable listed before it.
 * Sentinel and Cluster: REDIS_MODE and the addresses, the password in REDIS_PASSWORD (and the
 * sentinels' own in REDIS_SENTINEL_PASSWORD), which the services read. Either way the password
 * never passes through the operator.
 */
export function redisEnv(c: OperatorConfig): EnvVar[] {
  const r = c.redis;
  const ref = r.passwordSecretRef;
  if (r.mode !== "standalone") {
    return [
      env("REDIS_MODE", r.mode),
      ...(r.mode === "sentinel"
        ? [env("REDIS_SENTINELS", r.sentinels.join(",")), env("REDIS_SENTINEL_MASTER", r.masterName)]
        : [env("REDIS_CLUSTER_NODES", r.nodes.join(","))]),
      ...(r.tls ? [env("REDIS_TLS", "true")] : []),
      ...(ref ? [secretEnv("REDIS_PASSWORD", ref)] : []),
      ...(r.mode === "sentinel" && r.sentinelPasswordSecretRef
        ? [secretEnv("REDIS_SENTINEL_PASSWORD", r.sentinelPasswordSecretRef)]
        : []),
    ];
  }
  if (!ref) return [env("REDIS_URL", r.url)];
  const url = c.redis.url.replace(/^(rediss?:\/\/)(?:[^@/]*@)?/, "$1:$(REDIS_PASSWORD)@");
  return [secretEnv("REDIS_PASSWORD", ref), env("REDIS_URL", url)];
}

/** Whether search keeps its vectors in the embedded store (no Qdrant URL). */
export function embeddedStore(c: OperatorConfig): boolean {
  return c.qdrant.url.trim() === "";
}

/**
 * Why the search Deployment must not be applied, or undefined: the embedded store is one pod's
 * disk, so a second replica would answer from a different (diverging) set of vectors.
 */
export function searchRefusal(c: OperatorConfig): string | undefined {
  if (!embeddedStore(c) || c.search.replicas <= 1) return undefined;
  return `search.replicas is ${c.search.replicas} but the embedded vector store serves one replica only: set qdrant.url (or qdrant.deploy.enabled) or search.replicas=1`;
}

export function gatewayObjects(
  c: OperatorConfig,
  providerKeys: ProviderKeyRef[],
  owner?: OwnerReference,
): KubeObject[] {
  const keys = [...providerKeys].sort((a, b) =>
    `${a.namespace}/${a.secret}/${a.key}`.localeCompare(`${b.namespace}/${b.secret}/${b.key}`),
  );
  const volumes =
    keys.length === 0
      ? []
      : [
          {
            name: "provider-keys",
            projected: {
              defaultMode: 0o440,
              sources: [
                {
                  secret: {
                    name: PROVIDER_KEYS_SECRET,
                    optional: true,
                    items: keys.map((k) => ({ key: mirrorKey(k), path: `${k.namespace}/${k.secret}/${k.key}` })),
                  },
                },
              ],
            },
          },
        ];
  const mounts = keys.length === 0 ? [] : [{ name: "provider-keys", mountPath: c.gateway.secretsDir, readOnly: true }];
  return dataPlaneObjects(
    c,
    {
      name: GATEWAY_NAME,
      component: "gateway",
      settings: c.gateway,
      env: [
        ...redisEnv(c),
        ...optionalEnv("CAPSTAN_NAMESPACE", dataPlaneNamespace(c)),
        // Search's internal port, the only one that accepts the internal token (which reaches
        // only the Agent's namespace there).
        env("CAPSTAN_SEARCH_URL", searchInternalServiceUrl(c)),
        secretEnv("CAPSTAN_INTERNAL_TOKEN", { name: c.internalTokenSecret, key: INTERNAL_TOKEN_KEY }),
        secretEnv("CAPSTAN_KEY_VERIFIER", { name: c.keyVerifierSecret, key: KEY_VERIFIER_KEY }),
        env("CAPSTAN_SECRETS_DIR", c.gateway.secretsDir),
        ...optionalEnv("CAPSTAN_EGRESS_ALLOWED_HOSTS", c.egressAllowedHosts.join(",") || undefined),
        // The limiter's Redis-down share is QPM / replicas; the drain window fits the grace period.
        env("CAPSTAN_LIMITER_REPLICAS", c.gateway.replicas),
        env("CAPSTAN_TERMINATION_GRACE_SECONDS", c.gateway.terminationGracePeriodSeconds),
      ],
      volumes,
      mounts,
      strategy: "RollingUpdate",
    },
    owner,
  );
}

export function searchObjects(c: OperatorConfig, owner?: OwnerReference): KubeObject[] {
  const embedded = embeddedStore(c);
  const claim = c.search.persistence.claimName;
  const data = claim ? { persistentVolumeClaim: { claimName: claim } } : { emptyDir: {} };
  const qdrant = qdrantSearchSettings(c);
  return dataPlaneObjects(
    c,
    {
      name: SEARCH_NAME,
      component: "search",
      settings: c.search,
      env: [
        // Each SearchKey's requests per minute, shared by every search replica.
        ...redisEnv(c),
        secretEnv("CAPSTAN_INTERNAL_TOKEN", { name: c.internalTokenSecret, key: INTERNAL_TOKEN_KEY }),
        secretEnv("CAPSTAN_KEY_VERIFIER", { name: c.keyVerifierSecret, key: KEY_VERIFIER_KEY }),
        env("CAPSTAN_DATA_DIR", c.search.dataDir),
        ...qdrant.env,
        ...optionalEnv("CAPSTAN_TRUSTED_PROXIES", c.search.trustedProxies),
        ...optionalEnv("CAPSTAN_EGRESS_ALLOWED_HOSTS", c.egressAllowedHosts.join(",") || undefined),
        ...optionalEnv("CAPSTAN_NAMESPACE", dataPlaneNamespace(c)),
      ],
      volumes: [{ name: "data", ...data }, ...qdrant.volumes],
      mounts: [{ name: "data", mountPath: c.search.dataDir }, ...qdrant.mounts],
      // Two pods must never open the embedded store's files at once (and a ReadWriteOnce claim
      // may not attach to a second node): the old pod stops before the new one starts.
      strategy: embedded ? "Recreate" : "RollingUpdate",
      // Search closes its listener on SIGTERM (the gateway has its own unready delay): without
      // the pause, requests the ingress still routes to a replica of a rolling update fail. Only
      // on a shared store: a stopping pod of the embedded store must refuse at once, or a write
      // still routed to it (the operator's ingestion) lands in a store that is going away instead
      // of being retried on the new pod (seen in the e2e suite: a knowledge base reported Ready
      // with its chunks lost when the chart moved search onto Qdrant).
      ...(embedded ? {} : { preStopSleepSeconds: SEARCH_PRESTOP_SLEEP_SECONDS }),
    },
    owner,
  );
}

/** The mirror of every Agent's provider key in the gateway's namespace (values base64). */
export function providerKeysSecret(
  c: OperatorConfig,
  values: Map<ProviderKeyRef, string>,
  owner?: OwnerReference,
): KubeObject {
  const data: Record<string, string> = {};
  for (const [ref, b64] of values) data[mirrorKey(ref)] = b64;
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: PROVIDER_KEYS_SECRET,
      namespace: c.namespace,
      labels: labels("gateway", PROVIDER_KEYS_SECRET),
      ...owned(owner),
    },
    type: "Opaque",
    data,
  };
}
