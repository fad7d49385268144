// Which knowledge bases exist (a KnowledgeBase resource in the view with that id) and what their
// collection holds (the store's CollectionInfo, cached briefly: Qdrant is a network hop away).
import { type KnowledgeBase, knowledgeIdOf } from "@capstan/shared/api";
import type { ResourceView } from "@capstan/shared/resource-view";
import type { CollectionInfo, VectorStore } from "./store/types.ts";

export class KnowledgeBases {
  private ids: Map<string, KnowledgeBase> | undefined;
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

  private index(): Map<string, KnowledgeBase> {
    this.ids ??= new Map(this.view.list("KnowledgeBase").map((kb) => [knowledgeIdOf(kb), kb]));
    return this.ids;
  }

  exists(knowledgeId: string): boolean {
    return this.index().has(knowledgeId);
  }

  resource(knowledgeId: string): KnowledgeBase | undefined {
    return this.index().get(knowledgeId);
  }

  async collection(knowledgeId: string): Promise<CollectionInfo | undefined> {
    const hit = this.cache.get(knowledgeId);
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.info;
    const info = await this.store.getCollection(knowledgeId);
    this.cache.set(knowledgeId, { info, at: Date.now() });
    return info;
  }

  /** Called after this process changed a collection. */
  invalidate(knowledgeId: string): void {
    this.cache.delete(knowledgeId);
  }
}
