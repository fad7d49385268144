// Typed reads and writes over KubeHttp: get, create, server-side apply (one field manager,
// forced, as controller-runtime's client.Apply), status apply through the status subresource,
// JSON merge patch (finalizers, with optimistic locking) and delete.
import { isStatus, type KubeHttp, type KubeObject, type ResourceType, resourcePath } from "@capstan/shared/kube";

export const FIELD_MANAGER = "capstan-operator";

export class ObjectClient {
  readonly http: KubeHttp;
  readonly fieldManager: string;

  constructor(http: KubeHttp, fieldManager = FIELD_MANAGER) {
    this.http = http;
    this.fieldManager = fieldManager;
  }

  async get<T extends KubeObject>(type: ResourceType, namespace: string, name: string): Promise<T | undefined> {
    try {
      return await this.http.json<T>(resourcePath(type, namespace, name));
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  }

  create<T extends KubeObject>(type: ResourceType, obj: T): Promise<T> {
    return this.http.json<T>(resourcePath(type, obj.metadata.namespace), {
      method: "POST",
      body: { ...obj, apiVersion: type.apiVersion, kind: type.kind },
      query: { fieldManager: this.fieldManager },
    });
  }

  /** Server-side apply: the object states every field this manager owns. */
  apply<T extends KubeObject>(type: ResourceType, obj: T): Promise<T> {
    return this.http.json<T>(resourcePath(type, obj.metadata.namespace, obj.metadata.name), {
      method: "PATCH",
      body: { ...obj, apiVersion: type.apiVersion, kind: type.kind },
      contentType: "application/apply-patch+yaml",
      query: { fieldManager: this.fieldManager, force: true },
    });
  }

  /** Server-side apply of the status subresource; fields left out are removed from status. */
  applyStatus<T extends KubeObject>(type: ResourceType, namespace: string, name: string, status: unknown): Promise<T> {
    return this.http.json<T>(`${resourcePath(type, namespace, name)}/status`, {
      method: "PATCH",
      body: { apiVersion: type.apiVersion, kind: type.kind, metadata: { name, namespace }, status },
      contentType: "application/apply-patch+yaml",
      query: { fieldManager: this.fieldManager, force: true },
    });
  }

  /** JSON merge patch; pass metadata.resourceVersion in the patch for optimistic locking. */
  mergePatch<T extends KubeObject>(type: ResourceType, namespace: string, name: string, patch: unknown): Promise<T> {
    return this.http.json<T>(resourcePath(type, namespace, name), {
      method: "PATCH",
      body: patch,
      contentType: "application/merge-patch+json",
      query: { fieldManager: this.fieldManager },
    });
  }

  async delete(type: ResourceType, namespace: string, name: string): Promise<boolean> {
    try {
      await this.http.json(resourcePath(type, namespace, name), {
        method: "DELETE",
        body: { kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background" },
      });
      return true;
    } catch (err) {
      if (isStatus(err, 404)) return false;
      throw err;
    }
  }
}
