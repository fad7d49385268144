// Which knowledge bases exist (a KnowledgeBase resource in the view, by namespace and id) and what
// their collection holds (the store's CollectionInfo, cached briefly: Qdrant is a network hop
// away). A knowledge base is `<namespace>.<kb_id>` everywhere below this (storeKey): the same id
// in two namespaces is two knowledge bases. Two KnowledgeBases of one namespace claiming the same
// id: the oldest owns it (the operator reports the other one DuplicateKnowledgeId).
import { type KnowledgeBase, knowledgeIdOf, ownerFirst } from "@capstan/shared/api";
import type { ResourceView } from "@capstan/shared/resource-view";
import { type CollectionInfo, storeKey, type VectorStore } from "./store/types.ts";

/** Resources without a namespace (standalone files that name none) are in this one. */
export const DEFAULT_NAMESPACE = "default";

export const namespaceOf = (r: { metadata: { namespace?: string | undefined } }) =>
  r.metadata.namespace || DEFAULT_NAMESPACE;

export class KnowledgeBases {
  private ids: { byKey: Map<string, KnowledgeBase>; namespacesOf: Map<string, Set<string>> } | undefined;
  private readonly cache = new Map<string, { info: CollectionInfo | undefined; at: number }>();
  private readonly view: ResourceView;
  private readonly store: VectorStore;
  private readonly ttlMs: number;
  private readonly unsubscribe: () => void;

  constructor(view: ResourceView, store: VectorStore, ttlMs = 5000) {
    this.view = view;
    this.store = store;
    this.ttlMs = ttlMs;
    this.unsubscribe = view.onChange((e) => {
      if (e.type === "replace" ? e.kind === "KnowledgeBase" : e.resource.kind === "KnowledgeBase") this.ids = undefined;
    });
  }

  close(): void {
    this.unsubscribe();
  }

  private index() {
    if (this.ids) return this.ids;
    const byKey = new Map<string, KnowledgeBase>();
    const namespacesOf = new Map<string, Set<string>>();
    for (const kb of [...this.view.list("KnowledgeBase")].sort(ownerFirst)) {
      const id = knowledgeIdOf(kb);
      const key = storeKey(namespaceOf(kb), id);
      if (!byKey.has(key)) byKey.set(key, kb);
      namespacesOf.set(id, (namespacesOf.get(id) ?? new Set()).add(namespaceOf(kb)));
    }
    this.ids = { byKey, namespacesOf };
    return this.ids;
  }

  /** The store key of a knowledge base of this namespace, or undefined when there is none. */
  keyOf(namespace: string, knowledgeId: string): string | undefined {
    const key = storeKey(namespace, knowledgeId);
    return this.index().byKey.has(key) ? key : undefined;
  }

  resource(key: string): KnowledgeBase | undefined {
    return this.index().byKey.get(key);
  }

  /** How many namespaces have a KnowledgeBase with this id (the legacy migration needs exactly one). */
  namespacesWith(knowledgeId: string): number {
    return this.index().namespacesOf.get(knowledgeId)?.size ?? 0;
  }

  async collection(key: string): Promise<CollectionInfo | undefined> {
    const hit = this.cache.get(key);
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.info;
    const info = await this.store.getCollection(key);
    this.cache.set(key, { info, at: Date.now() });
    return info;
  }

  /** Called after this process changed a collection. */
  invalidate(key: string): void {
    this.cache.delete(key);
  }
}
