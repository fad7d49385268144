// The read-only resource view of DESIGN.md section 2: data-plane processes learn channels, keys,
// agents and knowledge bases from it. It is fed by a source (a read-only watch of the API server,
// or a folder of YAML files) and keeps serving its last state when the source is unreachable.
import { EventEmitter } from "node:events";
import type { KindName } from "../api/kinds.ts";
import type { AccessChannel, Agent, AnyResource, KnowledgeBase, Scraper, SearchKey } from "../api/resources.ts";

interface ByKind {
  Agent: Agent;
  AccessChannel: AccessChannel;
  SearchKey: SearchKey;
  KnowledgeBase: KnowledgeBase;
  Scraper: Scraper;
}

export type ViewEvent = { type: "upsert" | "delete"; resource: AnyResource } | { type: "replace"; kind: KindName };

function keyOf(namespace: string | undefined, name: string): string {
  return `${namespace ?? "default"}/${name}`;
}

export class ResourceView {
  private readonly stores = new Map<KindName, Map<string, AnyResource>>();
  private readonly events = new EventEmitter();
  private readonly synced = new Set<KindName>();

  /** Replaces every object of a kind (after a list, or a file reload). */
  replace(kind: KindName, items: AnyResource[]): void {
    const store = new Map<string, AnyResource>();
    for (const item of items) store.set(keyOf(item.metadata.namespace, item.metadata.name), item);
    this.stores.set(kind, store);
    this.synced.add(kind);
    this.events.emit("change", { type: "replace", kind } satisfies ViewEvent);
  }

  upsert(resource: AnyResource): void {
    const store = this.storeFor(resource.kind);
    store.set(keyOf(resource.metadata.namespace, resource.metadata.name), resource);
    this.events.emit("change", { type: "upsert", resource } satisfies ViewEvent);
  }

  delete(resource: AnyResource): void {
    this.storeFor(resource.kind).delete(keyOf(resource.metadata.namespace, resource.metadata.name));
    this.events.emit("change", { type: "delete", resource } satisfies ViewEvent);
  }

  get<K extends KindName>(kind: K, namespace: string | undefined, name: string): ByKind[K] | undefined {
    return this.stores.get(kind)?.get(keyOf(namespace, name)) as ByKind[K] | undefined;
  }

  list<K extends KindName>(kind: K): ByKind[K][] {
    return [...(this.stores.get(kind)?.values() ?? [])] as ByKind[K][];
  }

  /** True once every listed kind has been loaded at least once (readiness). */
  hasSynced(...kinds: KindName[]): boolean {
    return kinds.every((k) => this.synced.has(k));
  }

  /** Called on every change; returns an unsubscribe function. */
  onChange(listener: (event: ViewEvent) => void): () => void {
    this.events.on("change", listener);
    return () => this.events.off("change", listener);
  }

  private storeFor(kind: KindName): Map<string, AnyResource> {
    let store = this.stores.get(kind);
    if (!store) {
      store = new Map();
      this.stores.set(kind, store);
    }
    return store;
  }
}
