// Feeds a ResourceView from the API server with read-only list+watch of the five kinds (status
// included, Secrets never). On disconnect the view keeps its last state and the reflectors resume.
import type { KubeConfig } from "@kubernetes/client-node";
import { API_VERSION } from "../api/common.ts";
import { KIND_NAMES, KINDS, type KindName } from "../api/kinds.ts";
import { type AnyResource, parseResource } from "../api/resources.ts";
import { collectionPath, KubeClient } from "../kube/client.ts";
import { type KubeObject, Reflector } from "../kube/reflector.ts";
import type { ResourceView } from "./view.ts";

export interface KubeSourceOptions {
  /** Watch one namespace; default all namespaces. */
  namespace?: string;
  kinds?: KindName[];
  onError?: (err: Error, kind: KindName) => void;
}

export class KubeSource {
  private readonly reflectors: Reflector<KubeObject>[] = [];

  private readonly view: ResourceView;
  private readonly config: KubeConfig;
  private readonly opts: KubeSourceOptions;

  constructor(view: ResourceView, config: KubeConfig, opts: KubeSourceOptions = {}) {
    this.view = view;
    this.config = config;
    this.opts = opts;
  }

  /** Resolves when every kind has been listed once. */
  async start(): Promise<void> {
    const client = new KubeClient(this.config);
    const kinds = this.opts.kinds ?? KIND_NAMES;
    await Promise.all(
      kinds.map((kind) => {
        const parse = (obj: KubeObject): AnyResource | undefined => {
          try {
            return parseResource({ ...obj, apiVersion: API_VERSION, kind });
          } catch (err) {
            this.opts.onError?.(err as Error, kind);
            return undefined;
          }
        };
        const reflector = new Reflector<KubeObject>(
          client,
          collectionPath(API_VERSION, KINDS[kind].plural, this.opts.namespace),
          {
            onList: (items) =>
              this.view.replace(
                kind,
                items.map(parse).filter((r): r is AnyResource => r !== undefined),
              ),
            onEvent: (type, obj) => {
              const resource = parse(obj);
              if (!resource) return;
              if (type === "DELETED") this.view.delete(resource);
              else this.view.upsert(resource);
            },
            onError: (err) => this.opts.onError?.(err, kind),
          },
        );
        this.reflectors.push(reflector);
        return reflector.start();
      }),
    );
  }

  stop(): void {
    for (const r of this.reflectors) r.stop();
  }
}
