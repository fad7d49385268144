// The Resource every process's spans carry: service.name (the process's default, which
// OTEL_SERVICE_NAME overrides) and, in a pod, Kubernetes' resource attributes from the downward
// API. The chart's and the operator's Deployments give each container these variables
// (charts/capstan/templates/_helpers.tpl "capstan.k8sEnv", operator/src/translate/common.ts
// k8sEnv); OTEL_RESOURCE_ATTRIBUTES, read after them by the SDK, still overrides any of them.
//
// service.instance.id is `<namespace>.<pod>.<container>`, as the semantic conventions recommend
// for Kubernetes: stable across a container's restarts, distinct for each container of a pod.
import type { Attributes } from "@opentelemetry/api";

/** The downward API's variables, by the resource attribute each becomes. */
export const K8S_RESOURCE_ENV = {
  "k8s.namespace.name": "K8S_NAMESPACE_NAME",
  "k8s.pod.name": "K8S_POD_NAME",
  "k8s.pod.uid": "K8S_POD_UID",
  "k8s.node.name": "K8S_NODE_NAME",
  "k8s.deployment.name": "K8S_DEPLOYMENT_NAME",
  "k8s.container.name": "K8S_CONTAINER_NAME",
} as const;

/** k8s.* and service.instance.id from the environment: those set (none outside a pod). */
export function k8sResourceAttributes(env: NodeJS.ProcessEnv): Attributes {
  const out: Attributes = {};
  for (const [attribute, variable] of Object.entries(K8S_RESOURCE_ENV)) {
    const value = env[variable]?.trim();
    if (value) out[attribute] = value;
  }
  const [ns, pod, container] = [out["k8s.namespace.name"], out["k8s.pod.name"], out["k8s.container.name"]];
  if (ns && pod && container) out["service.instance.id"] = `${ns}.${pod}.${container}`;
  return out;
}

/** The attributes a process's Resource starts from; the SDK's detectors (OTEL_*) are merged over them. */
export function baseResourceAttributes(serviceName: string, env: NodeJS.ProcessEnv): Attributes {
  return { "service.name": serviceName, ...k8sResourceAttributes(env) };
}
