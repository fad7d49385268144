// What every object the operator creates carries: labels, the applied-hash annotation that lets a
// reconcile skip an unchanged apply (zero writes in steady state), and secure pod defaults.
import { createHash } from "node:crypto";
import type { KubeObject } from "@capstan/shared/kube";
import type { OperatorConfig, PodSettings } from "../config.ts";
import type { ConditionInput } from "../controller/conditions.ts";

export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
export const MANAGED_BY = "capstan-operator";
export const PART_OF = { "app.kubernetes.io/part-of": "capstan", [MANAGED_BY_LABEL]: MANAGED_BY };
export const APPLIED_HASH = "capstan.dev/applied-hash";
export const CONFIG_HASH = "capstan.dev/config-hash";
export const ISSUED_AT = "capstan.dev/issued-at";

/** JSON with sorted keys, so equal objects hash equally. */
export function stableStringify(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(",")}}`;
}

export function shortHash(value: unknown, length = 16): string {
  return createHash("sha256").update(stableStringify(value)).digest("hex").slice(0, length);
}

/** Stamps obj with the hash of its own content (without the stamp). */
export function withAppliedHash<T extends KubeObject>(obj: T): T {
  const annotations = { ...(obj.metadata.annotations ?? {}) };
  delete annotations[APPLIED_HASH];
  const bare = { ...obj, metadata: { ...obj.metadata, annotations } };
  return { ...obj, metadata: { ...obj.metadata, annotations: { ...annotations, [APPLIED_HASH]: shortHash(bare) } } };
}

/**
 * True when every field of `desired` is present with the same value in `live` (the API server
 * adds defaults, so live may have more). Quantities are normalised by the server ("0.5" becomes
 * "500m"), so `resources` blocks are compared through the applied hash only.
 */
export function isSubset(desired: unknown, live: unknown, key = ""): boolean {
  if (key === "resources") return true;
  if (live === undefined && isEmpty(desired)) return true; // omitempty on the server side
  if (desired === null || typeof desired !== "object") return desired === live || String(desired) === String(live);
  if (live === null || typeof live !== "object") return false;
  if (Array.isArray(desired)) {
    if (!Array.isArray(live) || live.length !== desired.length) return false;
    return desired.every((d, i) => isSubset(d, live[i]));
  }
  return Object.entries(desired as Record<string, unknown>).every(
    ([k, v]) => v === undefined || isSubset(v, (live as Record<string, unknown>)[k], k),
  );
}

function isEmpty(v: unknown): boolean {
  if (v === "" || v === 0 || v === false || v === null) return true;
  if (Array.isArray(v)) return v.length === 0;
  return typeof v === "object" && v !== null && Object.keys(v).length === 0;
}

/** Whether applying `desired` would change nothing: same applied hash and no drift in our fields. */
export function upToDate(live: KubeObject | undefined, desired: KubeObject): boolean {
  if (!live) return false;
  if (live.metadata.annotations?.[APPLIED_HASH] !== desired.metadata.annotations?.[APPLIED_HASH]) return false;
  const { metadata, ...rest } = desired;
  return isSubset(rest, live) && isSubset(metadata.labels ?? {}, live.metadata.labels ?? {});
}

export const POD_SECURITY = {
  runAsNonRoot: true,
  runAsUser: 10001,
  runAsGroup: 10001,
  fsGroup: 10001,
  seccompProfile: { type: "RuntimeDefault" },
};

export const CONTAINER_SECURITY = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ["ALL"] },
};

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: Record<string, unknown>;
}

export function env(name: string, value: string | number | boolean): EnvVar {
  return { name, value: String(value) };
}

/**
 * An optional setting: no variable at all when unset or "" (empty means unset everywhere; the
 * processes' config loader treats an empty variable as absent too).
 */
export function optionalEnv(name: string, value: string | undefined): EnvVar[] {
  return value === undefined || value.trim() === "" ? [] : [env(name, value)];
}

/** Helm's extraEnv: literal values (empty ones dropped) and valueFrom references as given. */
export function extraEnv(list: PodSettings["extraEnv"]): EnvVar[] {
  return list.flatMap((e) => (e.valueFrom ? [{ name: e.name, valueFrom: e.valueFrom }] : optionalEnv(e.name, e.value)));
}

/** The standard OTEL_* variables from the operator's `otel` settings; none when no endpoint is set. */
export function otelEnv(o: OperatorConfig["otel"], serviceName: string): EnvVar[] {
  if (o.endpoint.trim() === "") return [];
  const attributes = Object.entries(o.resourceAttributes)
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join(",");
  return [
    env("OTEL_SERVICE_NAME", serviceName),
    env("OTEL_EXPORTER_OTLP_ENDPOINT", o.endpoint),
    ...optionalEnv("OTEL_EXPORTER_OTLP_PROTOCOL", o.protocol),
    ...optionalEnv("OTEL_RESOURCE_ATTRIBUTES", attributes),
    ...optionalEnv("OTEL_TRACES_SAMPLER", o.sampler),
    ...optionalEnv("OTEL_TRACES_SAMPLER_ARG", o.samplerArg),
  ];
}

/**
 * The downward API's variables behind the k8s.* resource attributes and service.instance.id of a
 * container's traces (services/shared/src/trace-resource.ts reads them): the pod's namespace,
 * name, UID and node from the pod itself, the Deployment's and the container's names as written
 * here. The chart's Deployments set the same ("capstan.k8sEnv" in _helpers.tpl).
 */
export function k8sEnv(deployment: string, container: string): EnvVar[] {
  const field = (name: string, fieldPath: string): EnvVar => ({ name, valueFrom: { fieldRef: { fieldPath } } });
  return [
    field("K8S_NAMESPACE_NAME", "metadata.namespace"),
    field("K8S_POD_NAME", "metadata.name"),
    field("K8S_POD_UID", "metadata.uid"),
    field("K8S_NODE_NAME", "spec.nodeName"),
    env("K8S_DEPLOYMENT_NAME", deployment),
    env("K8S_CONTAINER_NAME", container),
  ];
}

/** Pod-spec placement fields; empty ones are left out so the API server's defaults apply. */
export function podPlacement(p: PodSettings): Record<string, unknown> {
  return {
    ...(Object.keys(p.nodeSelector).length ? { nodeSelector: p.nodeSelector } : {}),
    ...(p.tolerations.length ? { tolerations: p.tolerations } : {}),
    ...(Object.keys(p.affinity).length ? { affinity: p.affinity } : {}),
    ...(p.imagePullSecrets.length ? { imagePullSecrets: p.imagePullSecrets } : {}),
    terminationGracePeriodSeconds: p.terminationGracePeriodSeconds,
  };
}

export function secretEnv(name: string, ref: { name: string; key: string }): EnvVar {
  return { name, valueFrom: { secretKeyRef: { name: ref.name, key: ref.key } } };
}

/**
 * Readiness is probed every 2 s: a new pod takes traffic within 2 s of being ready (the 5 s this
 * was made `helm install` to the first answer wait up to 5 s per hop), and each probe is a GET
 * answered from memory.
 */
export const READINESS_PERIOD_SECONDS = 2;

export function probe(path: string, port: string, periodSeconds = 10) {
  return { httpGet: { path, port }, periodSeconds, timeoutSeconds: 3, failureThreshold: 3 };
}

/**
 * Pod annotations that point an annotation-driven Prometheus at the internal port's /metrics
 * (the public port answers 404 there). Pod annotations of the configuration override them.
 */
export function scrapeAnnotations(internalPort: number): Record<string, string> {
  return { "prometheus.io/port": String(internalPort), "prometheus.io/path": "/metrics" };
}

/**
 * A condition on the knowledge bases a resource names (by knowledge id): True when each exists,
 * else False naming the missing ones. `label` introduces the list in the message ("scope: a, b").
 */
export function knowledgeFound(type: string, label: string, ids: string[], missing: string[]): ConditionInput {
  return missing.length === 0
    ? { type, status: "True", reason: "KnowledgeBasesFound", message: `${label}: ${ids.join(", ")}` }
    : {
        type,
        status: "False",
        reason: "KnowledgeBaseNotFound",
        message: `no KnowledgeBase with id ${missing.join(", ")}`,
      };
}
