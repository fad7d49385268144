// Feeds a ResourceView from the API server with read-only list+watch of the five kinds (status
// included, Secrets never). On disconnect the view keeps its last state and the reflectors resume
// (backoff with full jitter, relist on 410 Gone).
import { API_VERSION } from "../api/common.ts";
import { KIND_NAMES, KINDS, type KindName } from "../api/kinds.ts";
import { type AnyResource, parseResource } from "../api/resources.ts";
import type { KubeHttp } from "../kube/http.ts";
import { collectionPath, type KubeObject } from "../kube/objects.ts";
import { Reflector } from "../kube/reflector.ts";
import type { ResourceView } from "./view.ts";

export interface KubeSourceOptions {
  /** Watch one namespace; default all namespaces. */
  namespace?: string;
  kinds?: KindName[];
  onError?: (err: Error, kind: KindName) => void;
}

export class KubeSource {
  private readonly view: ResourceView;
  private readonly http: KubeHttp;
  private readonly opts: KubeSourceOptions;
  private readonly reflectors: Reflector<KubeObject>[] = [];

  /** `http` is a KubeHttp over loadKubeConfig() (KUBECONFIG and its contexts, or the in-cluster ServiceAccount). */
  constructor(view: ResourceView, http: KubeHttp, opts: KubeSourceOptions = {}) {
    this.view = view;
    this.http = http;
    this.opts = opts;
  }

  /** Resolves when every kind has been listed once. */
  async start(): Promise<void> {
    const kinds = this.opts.kinds ?? KIND_NAMES;
    await Promise.all(kinds.map((kind) => this.reflect(kind)));
  }

  stop(): void {
    for (const r of this.reflectors) r.stop();
  }

  private reflect(kind: KindName): Promise<void> {
    const parse = (obj: KubeObject): AnyResource | undefined => {
      try {
        return parseResource({ ...obj, apiVersion: API_VERSION, kind });
      } catch (err) {
        this.opts.onError?.(err as Error, kind);
        return undefined;
      }
    };
    const reflector = new Reflector<KubeObject>(
      this.http,
      collectionPath(API_VERSION, KINDS[kind].plural, this.opts.namespace),
      {
        replace: (items) =>
          this.view.replace(
            kind,
            items.map(parse).filter((r): r is AnyResource => r !== undefined),
          ),
        apply: (type, obj) => {
          const resource = parse(obj);
          if (!resource) return;
          if (type === "DELETED") this.view.delete(resource);
          else this.view.upsert(resource);
        },
      },
      { onError: (err) => this.opts.onError?.(err, kind) },
    );
    this.reflectors.push(reflector);
    return reflector.start();
  }
}
