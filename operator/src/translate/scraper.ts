// Pure translation of a Scraper into its Deployment (scraper API + rendering service, one image,
// two containers picked by SCRAPER_ROLE) and Service. Every variable of the reference's section 8
// comes from the spec; keys come from Secrets through secretKeyRef, never as literal values.
import type { Scraper } from "@capstan/shared/api";
import { API_VERSION, KINDS } from "@capstan/shared/api";
import { controllerRef, type KubeObject } from "@capstan/shared/kube";
import type { OperatorConfig } from "../config.ts";
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
import { redisEnv } from "./workloads.ts";

export const SCRAPER_TYPE = { apiVersion: API_VERSION, kind: "Scraper", plural: KINDS.Scraper.plural };
export const RENDER_PORT = 3000;
/** The API container's metrics and health (ADMIN_PORT), never on the API's own port. */
export const ADMIN_PORT = 3003;

/** Name of the Secret holding a generated scraper API key (auth enabled, no apiKeySecretRef). */
export function scraperKeySecretName(s: Scraper): string {
  return `${s.metadata.name}-scraper-key`;
}

/** The Secret key reference the scraper's API_KEY comes from, or undefined when auth is off. */
export function scraperApiKeyRef(s: Scraper): { name: string; key: string } | undefined {
  if (!s.spec.auth.enabled) return undefined;
  return s.spec.auth.apiKeySecretRef ?? { name: scraperKeySecretName(s), key: "key" };
}

/** URL the platform calls this scraper at: spec.client.url or the Service. */
export function scraperEndpoint(s: Scraper): string {
  return s.spec.client.url ?? `http://${s.metadata.name}.${s.metadata.namespace}.svc:${s.spec.port}`;
}

export function scraperEnv(s: Scraper): EnvVar[] {
  const spec = s.spec;
  const out: EnvVar[] = [
    env("PORT", spec.port),
    env("INTERNAL_PORT", spec.internalPort),
    env("ADMIN_PORT", ADMIN_PORT),
    env("LOGGING_LEVEL", spec.logLevel),
    ...optionalEnv("LLM_BASE_URL", spec.llm.baseURL),
    ...optionalEnv("MODEL_NAME", spec.llm.model),
    ...optionalEnv("MODEL_EMBEDDING_NAME", spec.llm.embeddingModel),
    ...optionalEnv("SEARCH_ENGINES", spec.search.engines.join(",")),
    ...optionalEnv("SEARCH_CATEGORIES", spec.search.categories.join(",")),
    env("BLOCK_MEDIA", spec.browser.blockMedia),
    env("MAX_CONCURRENT_REQUESTS", spec.tuning.maxConcurrentRequests),
    env("REQUEST_TIMEOUT", spec.tuning.requestTimeoutMs),
    env("WORKER_CONCURRENCY", spec.tuning.workerConcurrency),
    env("TASK_TIMEOUT", spec.tuning.taskTimeoutMs),
    env("AUTH_ENABLED", spec.auth.enabled),
    env("RENDER_PORT", RENDER_PORT),
    env("RENDER_URL", `http://127.0.0.1:${RENDER_PORT}`),
  ];
  if (spec.llm.apiKeySecretRef) out.push(secretEnv("LLM_API_KEY", spec.llm.apiKeySecretRef));
  if (spec.llm.localModelBaseURL) out.push(env("LOCAL_MODEL_BASE_URL", spec.llm.localModelBaseURL));
  if (spec.search.endpoint) out.push(env("SEARCH_ENDPOINT", spec.search.endpoint));
  const proxy = spec.browser.proxy;
  if (proxy) {
    out.push(env("PROXY_SERVER", proxy.server));
    if (proxy.usernameSecretRef) out.push(secretEnv("PROXY_USERNAME", proxy.usernameSecretRef));
    if (proxy.passwordSecretRef) out.push(secretEnv("PROXY_PASSWORD", proxy.passwordSecretRef));
  }
  const apiKey = scraperApiKeyRef(s);
  if (apiKey) out.push(secretEnv("API_KEY", apiKey));
  if (spec.allowedHosts?.length) out.push(env("SCRAPER_ALLOWED_HOSTS", spec.allowedHosts.join(",")));
  // Chromium writes its profile under HOME; the root filesystem is read-only.
  out.push(env("HOME", "/tmp"));
  return out;
}

/**
 * Shared crawl jobs (REDIS_URL, docs/scraper.md "Jobs"): for Scrapers in the platform's own
 * namespace only. The platform Redis also holds rate-limit counters and chat histories, and a
 * tenant who may exec into pods of their namespace would reach it through their Scraper's
 * variables; tenant Scrapers keep their jobs in memory. Each Scraper gets its own key prefix: one
 * Scraper never runs another's pages (their allowed hosts and proxies differ).
 */
export function scraperJobsEnv(s: Scraper, c: OperatorConfig): EnvVar[] {
  const namespace = s.metadata.namespace ?? "default";
  if (namespace !== c.namespace) return [];
  return [...redisEnv(c), env("SCRAPER_JOBS_REDIS_PREFIX", `{capstan-scraper:${namespace}/${s.metadata.name}}`)];
}

export function scraperObjects(s: Scraper, c: OperatorConfig): KubeObject[] {
  const name = s.metadata.name;
  const namespace = s.metadata.namespace ?? "default";
  const labels = { ...PART_OF, "app.kubernetes.io/name": "capstan-scraper", "app.kubernetes.io/instance": name };
  const selector = { "app.kubernetes.io/name": "capstan-scraper", "app.kubernetes.io/instance": name };
  const owner = [controllerRef(s, SCRAPER_TYPE)];
  const template = scraperPodTemplate(s, c, labels);
  // The config hash on the pod template rolls the pods when anything they run with changes.
  const configHash = shortHash(template);
  return [
    withAppliedHash({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name, namespace, labels, ownerReferences: owner },
      spec: {
        replicas: s.spec.replicas,
        selector: { matchLabels: selector },
        template: {
          ...template,
          metadata: { labels, annotations: { ...template.metadata.annotations, [CONFIG_HASH]: configHash } },
        },
      },
    }),
    withAppliedHash({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace, labels, ownerReferences: owner },
      spec: {
        type: "ClusterIP",
        selector,
        ports: [
          { name: "http", port: s.spec.port, targetPort: "http", protocol: "TCP" },
          // Metrics and health for an in-cluster Prometheus (a ServiceMonitor names "admin").
          { name: "admin", port: ADMIN_PORT, targetPort: "admin", protocol: "TCP" },
        ],
      },
    }),
  ];
}

/** The pod of a Scraper: the API container and the rendering service's, sharing /tmp and /dev/shm. */
function scraperPodTemplate(s: Scraper, c: OperatorConfig, labels: Record<string, string>) {
  const name = s.metadata.name;
  // Platform-wide settings (Helm values) after the Scraper's own, so an operator-level extraEnv wins.
  const common = [...scraperEnv(s), ...otelEnv(c.otel, `capstan-scraper-${name}`), ...extraEnv(c.scraper.extraEnv)];
  const mounts = [
    { name: "tmp", mountPath: "/tmp" },
    { name: "dshm", mountPath: "/dev/shm" },
  ];
  // Where an annotation-driven Prometheus finds the API's metrics (the pod's own annotations win).
  const annotations = { ...scrapeAnnotations(ADMIN_PORT), ...c.scraper.podAnnotations };
  return {
    metadata: { labels, annotations },
    spec: {
      automountServiceAccountToken: false,
      securityContext: POD_SECURITY,
      ...podPlacement(c.scraper),
      containers: [apiContainer(s, c, common, mounts), renderContainer(s, c, common, mounts)],
      volumes: [
        { name: "tmp", emptyDir: {} },
        { name: "dshm", emptyDir: { medium: "Memory", sizeLimit: "256Mi" } },
      ],
    },
  };
}

/** The scraper's API (SCRAPER_ROLE=api), with its admin port for metrics and health. */
function apiContainer(s: Scraper, c: OperatorConfig, common: EnvVar[], mounts: unknown[]) {
  return scraperContainer(s, c, "scraper", mounts, {
    env: [...k8sEnv(s.metadata.name, "scraper"), env("SCRAPER_ROLE", "api"), ...scraperJobsEnv(s, c), ...common],
    ports: [
      { name: "http", containerPort: s.spec.internalPort, protocol: "TCP" },
      { name: "admin", containerPort: ADMIN_PORT, protocol: "TCP" },
    ],
    // Health on the admin port: the API's port keeps only the reference's /health.
    livenessProbe: probe("/healthz", "admin"),
    readinessProbe: probe("/readyz", "admin", READINESS_PERIOD_SECONDS),
    resources: c.scraper.resources,
  });
}

/** The rendering service (SCRAPER_ROLE=render): Chromium, called by the API on localhost. */
function renderContainer(s: Scraper, c: OperatorConfig, common: EnvVar[], mounts: unknown[]) {
  return scraperContainer(s, c, "render", mounts, {
    // Chromium's own sandbox needs user namespaces, which the runtime's default seccomp
    // profile refuses (Chromium exits at start): it runs off, and the container is the
    // boundary (non-root, no capabilities, RuntimeDefault seccomp, read-only root).
    env: [
      ...k8sEnv(s.metadata.name, "render"),
      env("SCRAPER_ROLE", "render"),
      env("CHROMIUM_SANDBOX", "false"),
      ...common,
    ],
    ports: [{ name: "render", containerPort: RENDER_PORT, protocol: "TCP" }],
    livenessProbe: probe("/scrape", "render", 15),
    readinessProbe: probe("/scrape", "render", READINESS_PERIOD_SECONDS),
    resources: c.scraper.renderResources,
  });
}

/** A container of the Scraper's image (both roles run it), locked down, with the shared mounts. */
function scraperContainer(
  s: Scraper,
  c: OperatorConfig,
  name: string,
  mounts: unknown[],
  own: { env: EnvVar[]; ports: unknown[]; livenessProbe: unknown; readinessProbe: unknown; resources: unknown },
) {
  return {
    name,
    image: s.spec.image ?? c.scraper.image,
    imagePullPolicy: c.scraper.imagePullPolicy,
    ...own,
    securityContext: CONTAINER_SECURITY,
    volumeMounts: mounts,
  };
}

export function configHashOf(deployment: KubeObject): string | undefined {
  const spec = deployment.spec as { template?: { metadata?: { annotations?: Record<string, string> } } } | undefined;
  return spec?.template?.metadata?.annotations?.[CONFIG_HASH];
}

export interface DeploymentStatus {
  observedGeneration?: number;
  replicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  updatedReplicas?: number;
  conditions?: { type: string; status: string; reason?: string; message?: string }[];
}

/**
 * Readiness of a workload without assuming a Deployment controller: "applied and observed" is
 * Ready (reason Applied) until the Deployment controller reports; then Ready follows its rollout.
 */
export function workloadReadiness(
  deployment: KubeObject | undefined,
  wantReplicas: number,
): { ready: boolean; reason: string; message: string; readyReplicas: number; replicas: number } {
  if (!deployment)
    return {
      ready: false,
      reason: "DeploymentMissing",
      message: "Deployment not applied yet",
      readyReplicas: 0,
      replicas: 0,
    };
  const st = (deployment.status ?? {}) as DeploymentStatus;
  const readyReplicas = st.readyReplicas ?? 0;
  const replicas = st.replicas ?? 0;
  if (st.observedGeneration === undefined) {
    return {
      ready: true,
      reason: "Applied",
      message: "Deployment applied; no rollout status reported yet",
      readyReplicas,
      replicas,
    };
  }
  if (st.observedGeneration < (deployment.metadata.generation ?? 0)) {
    return {
      ready: false,
      reason: "RollingOut",
      message: "Deployment controller has not observed the change yet",
      readyReplicas,
      replicas,
    };
  }
  const failed = st.conditions?.find((c) => c.type === "ReplicaFailure" && c.status === "True");
  if (failed)
    return {
      ready: false,
      reason: "ReplicaFailure",
      message: failed.message ?? "replica failure",
      readyReplicas,
      replicas,
    };
  if (readyReplicas < wantReplicas || (st.updatedReplicas ?? 0) < wantReplicas) {
    return {
      ready: false,
      reason: "RollingOut",
      message: `${readyReplicas}/${wantReplicas} replicas ready`,
      readyReplicas,
      replicas,
    };
  }
  return {
    ready: true,
    reason: "Available",
    message: `${readyReplicas}/${wantReplicas} replicas ready`,
    readyReplicas,
    replicas,
  };
}
