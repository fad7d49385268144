// The operator's reads and writes, all through client-node over the pooled transport. Objects by
// kind go through its KubernetesObjectApi (server-side apply with one field manager, forced, as
// controller-runtime's client.Apply; create, read, replace and delete, with its discovery of the
// kind's resource and its typed models for the core kinds). The status subresource (server-side
// apply of status), which KubernetesObjectApi has no form for, and JSON merge patches (finalizers
// with optimistic locking) go through its CustomObjectsApi, which keeps the capstan.dev kinds' JSON
// as the API server sent it; the patch's Content-Type is set by client-node middleware, since its
// generated patch methods otherwise send a JSON Patch.
import { conciseError, isStatus, type KubeHttp, type KubeObject, type ResourceType } from "@capstan/shared/kube";
import {
  CustomObjectsApi,
  type KubernetesObject,
  type KubernetesObjectApi,
  PatchStrategy,
} from "@kubernetes/client-node";

export const FIELD_MANAGER = "capstan-operator";

/** A client-node call's result as the JSON shape the operator reads, its failure as a KubeApiError. */
async function concise<T>(call: Promise<unknown>): Promise<T> {
  try {
    return (await call) as T;
  } catch (err) {
    throw conciseError(err);
  }
}

export class ObjectClient {
  readonly http: KubeHttp;
  readonly fieldManager: string;
  private readonly objects: KubernetesObjectApi;
  private readonly custom: CustomObjectsApi;

  constructor(http: KubeHttp, fieldManager = FIELD_MANAGER) {
    this.http = http;
    this.fieldManager = fieldManager;
    this.objects = http.objectApi();
    this.custom = http.api(CustomObjectsApi);
  }

  /** The CustomObjectsApi address of a namespaced object of a kind with an API group. */
  private customRef(type: ResourceType, namespace: string, name: string) {
    const slash = type.apiVersion.indexOf("/");
    if (slash < 0)
      throw new Error(`${type.kind}: CustomObjectsApi needs a kind of an API group, not ${type.apiVersion}`);
    const group = type.apiVersion.slice(0, slash);
    const version = type.apiVersion.slice(slash + 1);
    return { group, version, namespace, plural: type.plural, name };
  }

  private spec<T extends KubeObject>(type: ResourceType, obj: T): KubernetesObject {
    return { ...obj, apiVersion: type.apiVersion, kind: type.kind } as KubernetesObject;
  }

  async get<T extends KubeObject>(type: ResourceType, namespace: string, name: string): Promise<T | undefined> {
    try {
      const ref = { apiVersion: type.apiVersion, kind: type.kind, metadata: { name, namespace } };
      return (await this.objects.read(ref)) as unknown as T;
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw conciseError(err);
    }
  }

  create<T extends KubeObject>(type: ResourceType, obj: T): Promise<T> {
    return concise(this.objects.create(this.spec(type, obj), undefined, undefined, this.fieldManager));
  }

  /** Replaces the object (PUT); metadata.resourceVersion in obj makes it fail on a concurrent write. */
  replace<T extends KubeObject>(type: ResourceType, obj: T): Promise<T> {
    return concise(this.objects.replace(this.spec(type, obj), undefined, undefined, this.fieldManager));
  }

  /** Server-side apply: the object states every field this manager owns. */
  apply<T extends KubeObject>(type: ResourceType, obj: T): Promise<T> {
    const spec = this.spec(type, obj);
    return concise(
      this.objects.patch(spec, undefined, undefined, this.fieldManager, true, PatchStrategy.ServerSideApply),
    );
  }

  /** Server-side apply of the status subresource; fields left out are removed from status. */
  applyStatus<T extends KubeObject>(type: ResourceType, namespace: string, name: string, status: unknown): Promise<T> {
    return concise(
      this.custom.patchNamespacedCustomObjectStatus(
        {
          ...this.customRef(type, namespace, name),
          body: { apiVersion: type.apiVersion, kind: type.kind, metadata: { name, namespace }, status },
          fieldManager: this.fieldManager,
          force: true,
        },
        this.http.options({ contentType: PatchStrategy.ServerSideApply }),
      ),
    );
  }

  /** JSON merge patch; pass metadata.resourceVersion in the patch for optimistic locking. */
  mergePatch<T extends KubeObject>(type: ResourceType, namespace: string, name: string, patch: unknown): Promise<T> {
    return concise(
      this.custom.patchNamespacedCustomObject(
        { ...this.customRef(type, namespace, name), body: patch, fieldManager: this.fieldManager },
        this.http.options({ contentType: PatchStrategy.MergePatch }),
      ),
    );
  }

  async delete(type: ResourceType, namespace: string, name: string): Promise<boolean> {
    try {
      const ref = { apiVersion: type.apiVersion, kind: type.kind, metadata: { name, namespace } };
      await this.objects.delete(ref, undefined, undefined, undefined, undefined, "Background");
      return true;
    } catch (err) {
      if (isStatus(err, 404)) return false;
      throw conciseError(err);
    }
  }
}
