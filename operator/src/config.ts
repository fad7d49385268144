// The operator's configuration (Helm values become a config file plus env): where the shared
// data plane runs and how it is sized, Redis and Qdrant addresses, the platform scraping defaults,
// leader election and the metrics/health ports. Defaults here, then the file, then env.
import { envParsers, loadConfig } from "@capstan/shared";
import { httpUrl, secretKeyRef } from "@capstan/shared/api";
import { scrapingSettingsSchema } from "@capstan/shared/clients/scraper-client";
import { egressAllowList } from "@capstan/shared/egress";
import { z } from "zod";

/** The release: the default image tag, the chart's appVersion (config.test.ts checks they match). */
export const VERSION = "0.3.0";
const REGISTRY = "ghcr.io/capstan-dev";

const quantity = z.union([z.string().regex(/^[0-9.]+[a-zA-Z]*$/), z.number()]).transform(String);
const resources = z
  .object({
    requests: z.record(z.string(), quantity).optional(),
    limits: z.record(z.string(), quantity).optional(),
  })
  .default({});

/** An extra variable: a literal value or a Kubernetes `valueFrom` (secretKeyRef, fieldRef, ...). */
const extraEnvVar = z
  .object({
    name: z.string().min(1),
    value: z.string().optional(),
    valueFrom: z.record(z.string(), z.unknown()).optional(),
  })
  .refine((e) => e.value === undefined || e.valueFrom === undefined, "set value or valueFrom, not both");

/** Where and how a data-plane pod runs (Helm values of the same names; passed through as given). */
export const podFields = {
  /** Extra env for the workload's containers; an empty value is dropped (empty means unset). */
  extraEnv: z.array(extraEnvVar).default([]),
  nodeSelector: z.record(z.string(), z.string()).default({}),
  tolerations: z.array(z.record(z.string(), z.unknown())).default([]),
  affinity: z.record(z.string(), z.unknown()).default({}),
  podAnnotations: z.record(z.string(), z.string()).default({}),
  /** Secrets (in namespace) the kubelet pulls the image with: the chart's imagePullSecrets. */
  imagePullSecrets: z.array(z.object({ name: z.string().min(1) })).default([]),
  /** Kubernetes' default; the processes stop within 25 s of SIGTERM (stopOnSignals). */
  terminationGracePeriodSeconds: z.int().min(0).max(3600).default(30),
};
export type PodSettings = z.infer<z.ZodObject<typeof podFields>>;

const workloadFields = (image: string, port: number, replicas: number, servicePort: number) => ({
  image: z.string().min(1).default(`${REGISTRY}/${image}:${VERSION}`),
  imagePullPolicy: z.enum(["Always", "IfNotPresent", "Never"]).default("IfNotPresent"),
  replicas: z.int().min(0).max(1000).default(replicas),
  port: z.int().min(1).max(65535).default(port),
  servicePort: z.int().min(1).max(65535).default(servicePort),
  resources,
  /** URL clients call, written into status.endpoint; default the in-cluster Service. */
  publicUrl: httpUrl.optional(),
  ...podFields,
});

export const operatorConfigSchema = z.object({
  /** Namespace of the operator and the shared gateway/search workloads. */
  namespace: z.string().min(1).default("capstan-system"),
  /**
   * Watch the five kinds in these namespaces only (the chart then grants Roles there, no
   * ClusterRole); empty, with watchNamespace "", watches all namespaces.
   */
  watchNamespaces: z.array(z.string().min(1).max(63)).default([]),
  /** The earlier single-namespace form of watchNamespaces, still read: "" adds nothing. */
  watchNamespace: z.string().default(""),
  logLevel: z.enum(["trace", "debug", "info", "warn", "error", "fatal"]).default("info"),
  /** This instance's identity in the Lease (the pod name). */
  instanceId: z
    .string()
    .min(1)
    .default(process.env.HOSTNAME ?? "capstan-operator"),
  /** ServiceAccount of the data-plane pods (read-only RBAC; see charts/capstan/files/rbac.yaml). */
  dataPlaneServiceAccount: z.string().min(1).default("capstan-data-plane"),
  /**
   * The chart's ConfigMap (in namespace): the shared data plane's objects are owned by it, so
   * `helm uninstall` deletes them through garbage collection. Absent: nothing owns them.
   */
  ownerConfigMap: z.string().min(1).optional(),
  /**
   * Non-public destinations an Agent's provider baseURL and search's embedding/rerank endpoints
   * may reach (CAPSTAN_EGRESS_ALLOWED_HOSTS on the gateway and search; docs/security.md).
   */
  egressAllowedHosts: egressAllowList,
  /** Secret (in namespace) holding the gateway-to-search token; generated when absent. */
  internalTokenSecret: z.string().min(1).default("capstan-internal-token"),
  /**
   * Secret (in namespace) holding the HMAC key under which status carries user-supplied keys; the
   * gateway and search get it in env. Generated when absent (docs/security.md "Key verifiers").
   */
  keyVerifierSecret: z.string().min(1).default("capstan-key-verifier"),
  gateway: z
    .object({
      ...workloadFields("gateway", 8080, 2, 80),
      /** Metrics and health: the Service exposes it under the same number, inside the cluster. */
      internalPort: z.int().min(1).max(65535).default(8090),
      /** Where the operator reads budget spend and upstream breakers; default the Service's internal port. */
      internalUrl: httpUrl.optional(),
      /** How often status follows budget spend and upstream breakers (channels with a budget, Agents with upstreams). */
      usageRefreshMs: z.int().min(100).max(3_600_000).default(60_000),
      /** Where Agents' provider-key Secrets are mounted in the gateway pod. */
      secretsDir: z.string().min(1).default("/var/run/capstan/secrets"),
    })
    .prefault({}),
  search: z
    .object({
      ...workloadFields("search", 8081, 1, 80),
      /** Documents API, metrics and health: the Service exposes it under the same number, inside the cluster. */
      internalPort: z.int().min(1).max(65535).default(8091),
      /** Where the operator itself calls the documents API; default the Service's internal port. */
      internalUrl: httpUrl.optional(),
      trustedProxies: z.string().default(""),
      dataDir: z.string().min(1).default("/var/lib/capstan"),
      /**
       * The embedded store's PersistentVolumeClaim (the chart creates it or names an existing one).
       * Absent: an emptyDir, which loses every vector with the pod (tests and development only).
       */
      persistence: z.object({ claimName: z.string().min(1).optional() }).prefault({}),
    })
    .prefault({}),
  scraper: z
    .object({
      image: z.string().min(1).default(`${REGISTRY}/scraper:${VERSION}`),
      imagePullPolicy: z.enum(["Always", "IfNotPresent", "Never"]).default("IfNotPresent"),
      resources,
      renderResources: resources,
      ...podFields,
    })
    .prefault({}),
  redis: z
    .object({
      /** standalone: url; sentinel: sentinels + masterName; cluster: nodes (the data plane's REDIS_MODE). */
      mode: z.enum(["standalone", "sentinel", "cluster"]).default("standalone"),
      url: z.string().min(1).default("redis://capstan-redis:6379"),
      sentinels: z.array(z.string().min(1)).default([]),
      masterName: z.string().min(1).default("mymaster"),
      nodes: z.array(z.string().min(1)).default([]),
      tls: z.boolean().default(false),
      /** Secret key holding the password; put into the gateway's REDIS_URL by Kubernetes, never by us. */
      passwordSecretRef: secretKeyRef.optional(),
      /** Sentinel mode: Secret key holding the sentinels' own password, when they require one. */
      sentinelPasswordSecretRef: secretKeyRef.optional(),
    })
    .refine((r) => r.mode !== "sentinel" || r.sentinels.length > 0, {
      message: "redis.mode sentinel needs redis.sentinels (host:port of each sentinel)",
    })
    .refine((r) => r.mode !== "cluster" || r.nodes.length > 0, {
      message: "redis.mode cluster needs redis.nodes (host:port seed nodes)",
    })
    .prefault({}),
  qdrant: z
    .object({
      url: z.string().default(""),
      apiKeySecretRef: secretKeyRef.optional(),
      /** PEM CA bundle of a Qdrant behind a private CA, mounted into search (translate/qdrant.ts). */
      caSecretRef: secretKeyRef.optional(),
      caConfigMapRef: secretKeyRef.optional(),
      /** Layout of the collections search creates on a Qdrant cluster; 0: search decides from the peers. */
      collection: z
        .object({
          shardNumber: z.int().min(0).max(1024).default(0),
          replicationFactor: z.int().min(0).max(16).default(0),
          writeConsistencyFactor: z.int().min(0).max(16).default(0),
        })
        .prefault({}),
    })
    .refine((q) => !(q.caSecretRef && q.caConfigMapRef), { message: "set caSecretRef or caConfigMapRef, not both" })
    .prefault({}),
  /** OpenTelemetry export of every data-plane workload, rendered as the standard OTEL_* variables. */
  otel: z
    .object({
      /** OTLP endpoint; "" (or absent) exports nothing. */
      endpoint: z.string().default(""),
      protocol: z.enum(["", "grpc", "http/protobuf", "http/json"]).default(""),
      /** OTEL_RESOURCE_ATTRIBUTES, e.g. {deployment.environment: prod}. */
      resourceAttributes: z.record(z.string(), z.string()).default({}),
      /** OTEL_TRACES_SAMPLER (e.g. parentbased_traceidratio) and its argument. */
      sampler: z.string().default(""),
      samplerArg: z.string().default(""),
    })
    .prefault({}),
  /**
   * Platform "scraping" settings (reference section 8, its names: enabled, url, timeout,
   * max_retries, api_key), used by KnowledgeBases without scraperRef. Without url the operator
   * calls the in-cluster Service of the Scraper named `scraper` in `namespace` (platformScraperUrl),
   * never 127.0.0.1, which in a pod is the operator itself.
   */
  scraping: scrapingSettingsSchema.extend({ url: httpUrl.optional() }).prefault({}),
  /** Name of the platform's own Scraper (in `namespace`) whose Service is the default scraping url. */
  platformScraper: z.string().min(1).default("capstan-scraper"),
  leaderElection: z
    .object({
      enabled: z.boolean().default(true),
      leaseName: z.string().min(1).default("capstan-operator"),
      /** Namespace of the Lease; default `namespace`. */
      namespace: z.string().optional(),
      leaseDurationSeconds: z.number().positive().default(15),
      renewDeadlineSeconds: z.number().positive().default(10),
      retryPeriodSeconds: z.number().positive().default(2),
    })
    .prefault({})
    .refine(
      (l) => l.renewDeadlineSeconds < l.leaseDurationSeconds,
      "renewDeadlineSeconds must be < leaseDurationSeconds",
    ),
  metricsPort: z.int().min(0).max(65535).default(8080),
  healthPort: z.int().min(0).max(65535).default(8081),
  /** Every cached object is reconciled again this often (0: never). */
  resyncSeconds: z.int().min(0).default(600),
  /** Workers per controller: reconciles mostly wait on the API server, so more workers mean more throughput. */
  maxConcurrentReconciles: z.int().min(1).max(64).default(16),
  /** KnowledgeBases refreshing at once (each ingestion keeps a worker busy and loads the search service). */
  knowledgeBaseConcurrency: z.int().min(1).max(16).default(2),
  /**
   * How often a KnowledgeBase's document and chunk counts are read from search between refreshes
   * (documents uploaded through search's public documents API change them).
   */
  knowledgeBaseCountsSeconds: z.int().min(1).max(86_400).default(60),
  /** Timeout of one call to the API server. */
  apiTimeoutSeconds: z.int().min(1).max(300).default(30),
});

export type OperatorConfig = z.infer<typeof operatorConfigSchema>;
export type OperatorConfigInput = z.input<typeof operatorConfigSchema>;

export const operatorEnvMap = {
  CAPSTAN_NAMESPACE: "namespace",
  CAPSTAN_WATCH_NAMESPACE: "watchNamespace",
  LOG_LEVEL: "logLevel",
  POD_NAME: "instanceId",
  REDIS_URL: "redis.url",
  QDRANT_URL: "qdrant.url",
  GATEWAY_IMAGE: "gateway.image",
  SEARCH_IMAGE: "search.image",
  SCRAPER_IMAGE: "scraper.image",
  LEADER_ELECT: { path: "leaderElection.enabled", parse: envParsers.bool },
  METRICS_PORT: { path: "metricsPort", parse: envParsers.int },
  HEALTH_PORT: { path: "healthPort", parse: envParsers.int },
  SCRAPING_API_KEY: "scraping.api_key",
  SCRAPING_URL: "scraping.url",
};

export function loadOperatorConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides?: Record<string, unknown>,
): OperatorConfig {
  return loadConfig(operatorConfigSchema, {
    env,
    envMap: operatorEnvMap,
    file: env.CAPSTAN_OPERATOR_CONFIG,
    // An unknown CAPSTAN_ variable stops start-up, named with the nearest one the operator reads.
    strictEnv: { prefixes: ["CAPSTAN_"], also: ["CAPSTAN_OPERATOR_CONFIG", "CAPSTAN_KUBE_CONTEXT"] },
    ...(overrides ? { overrides } : {}),
  });
}

/** The namespaces the operator watches (watchNamespaces and watchNamespace), or undefined for all. */
export function watchedNamespaces(c: Pick<OperatorConfig, "watchNamespaces" | "watchNamespace">): string[] | undefined {
  const all = [...new Set([...c.watchNamespaces, ...(c.watchNamespace ? [c.watchNamespace] : [])])];
  return all.length > 0 ? all : undefined;
}

/**
 * The one namespace the data plane watches: the watched namespace when there is exactly one; with
 * several (or all) it reads the five kinds cluster-wide (its ClusterRole is read-only and names no
 * Secret) and serves only what the operator gave a status, i.e. resources of watched namespaces.
 */
export function dataPlaneNamespace(c: Pick<OperatorConfig, "watchNamespaces" | "watchNamespace">): string | undefined {
  const watched = watchedNamespaces(c);
  return watched?.length === 1 ? watched[0] : undefined;
}

/** In-cluster URL of a Service. */
export function serviceUrl(name: string, namespace: string, port: number): string {
  return `http://${name}.${namespace}.svc:${port}`;
}

export const GATEWAY_NAME = "capstan-gateway";
export const SEARCH_NAME = "capstan-search";

export function gatewayUrl(c: OperatorConfig): string {
  return c.gateway.publicUrl ?? serviceUrl(GATEWAY_NAME, c.namespace, c.gateway.servicePort);
}

/** The gateway's internal API (budget spend, upstream breakers), as the operator reads it. */
export function gatewayInternalUrl(c: OperatorConfig): string {
  return c.gateway.internalUrl ?? serviceUrl(GATEWAY_NAME, c.namespace, c.gateway.internalPort);
}

export function searchUrl(c: OperatorConfig): string {
  return c.search.publicUrl ?? serviceUrl(SEARCH_NAME, c.namespace, c.search.servicePort);
}

/** Where KnowledgeBases without scraperRef scrape: scraping.url, else the platform Scraper's Service. */
export function platformScraperUrl(c: OperatorConfig): string {
  return c.scraping.url ?? serviceUrl(c.platformScraper, c.namespace, 3002);
}

/**
 * How status names the scraper of a KnowledgeBase without scraperRef when a page cannot be
 * fetched: the chart's platform Scraper (whose Service is the default url), or the url configured
 * in its place.
 */
export function platformScraperVia(c: OperatorConfig): string {
  const url = platformScraperUrl(c);
  return c.scraping.url
    ? `the platform scraping url ${url}`
    : `the platform Scraper ${c.namespace}/${c.platformScraper} (${url})`;
}

/** The documents API: the internal port of the search Service. */
export function searchInternalUrl(c: OperatorConfig): string {
  return c.search.internalUrl ?? serviceUrl(SEARCH_NAME, c.namespace, c.search.internalPort);
}

/**
 * Search as the gateway calls it, inside the cluster: the Service's internal port, the only one
 * where search accepts the internal token.
 */
export function searchInternalServiceUrl(c: OperatorConfig): string {
  return serviceUrl(SEARCH_NAME, c.namespace, c.search.internalPort);
}
