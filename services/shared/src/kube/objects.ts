// Types and helpers for Kubernetes objects as the operator and the data plane handle them: any object with metadata,
// resource types (group/version/plural), object keys (namespace/name) and owner references.

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface Meta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: unknown[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: Meta;
  [field: string]: unknown;
}

export interface ResourceType {
  apiVersion: string;
  kind: string;
  plural: string;
}

export const SECRET: ResourceType = { apiVersion: "v1", kind: "Secret", plural: "secrets" };
export const SERVICE: ResourceType = { apiVersion: "v1", kind: "Service", plural: "services" };
export const CONFIG_MAP: ResourceType = { apiVersion: "v1", kind: "ConfigMap", plural: "configmaps" };
export const DEPLOYMENT: ResourceType = { apiVersion: "apps/v1", kind: "Deployment", plural: "deployments" };

/** The work-queue key of an object: "namespace/name". */
export function objectKey(obj: { metadata: { name: string; namespace?: string } }): string {
  return `${obj.metadata.namespace ?? ""}/${obj.metadata.name}`;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf("/");
  return { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** /apis/<group>/<version>[/namespaces/<ns>]/<plural>[/<name>] */
export function resourcePath(type: ResourceType, namespace?: string, name?: string): string {
  const base = type.apiVersion.includes("/") ? `/apis/${type.apiVersion}` : `/api/${type.apiVersion}`;
  const coll = namespace ? `${base}/namespaces/${namespace}/${type.plural}` : `${base}/${type.plural}`;
  return name ? `${coll}/${encodeURIComponent(name)}` : coll;
}

/** The controller owner reference pointing at obj (garbage collection deletes dependents with it). */
export function controllerRef(obj: { metadata: { name: string; uid?: string } }, type: ResourceType): OwnerReference {
  if (!obj.metadata.uid) throw new Error(`${type.kind} ${obj.metadata.name} has no uid`);
  return {
    apiVersion: type.apiVersion,
    kind: type.kind,
    name: obj.metadata.name,
    uid: obj.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function controllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller);
}

/** The collection path of a resource by apiVersion and plural, e.g. for the capstan.dev kinds. */
export function collectionPath(apiVersion: string, plural: string, namespace?: string): string {
  return resourcePath({ apiVersion, kind: "", plural }, namespace);
}
