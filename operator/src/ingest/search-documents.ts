// The search service's internal documents API as ingestion uses it. The interface matches the
// shared SearchClient (services/shared/src/clients/search-client.ts), so a SearchClient is one;
// the operator's own implementation wraps it to read the internal token from its Secret (the
// token may appear after the operator starts, and may change).
import type { OutboundMetrics } from "@capstan/shared";
import {
  type CarriedUploads,
  type DocumentInput,
  type KnowledgeBaseInfo,
  type KnowledgeBaseRef,
  type KnowledgeBaseSettings,
  type PruneRequest,
  type PruneResult,
  SearchClient,
  type UpsertResult,
} from "@capstan/shared/clients/search-client";

export type { CarriedUploads, DocumentInput, KnowledgeBaseInfo, KnowledgeBaseRef, KnowledgeBaseSettings };

export interface SearchDocuments {
  ensureKnowledgeBase(knowledgeId: KnowledgeBaseRef, settings: KnowledgeBaseSettings): Promise<unknown>;
  /** Idempotent: a missing knowledge base is not an error. */
  deleteKnowledgeBase(knowledgeId: KnowledgeBaseRef): Promise<unknown>;
  /** embedded: false when search held the same content already (only its stamps moved). */
  upsertDocument(knowledgeId: KnowledgeBaseRef, docsId: string, doc: DocumentInput): Promise<UpsertResult>;
  deleteDocument(knowledgeId: KnowledgeBaseRef, docsId: string): Promise<unknown>;
  /** The end of a refresh: what its sources no longer have goes (search decides from the stamps). */
  pruneDocuments(knowledgeId: KnowledgeBaseRef, request: PruneRequest): Promise<PruneResult>;
  getKnowledgeBase(knowledgeId: KnowledgeBaseRef): Promise<KnowledgeBaseInfo | undefined>;
  /** Makes the vector set built after a model change serve (absent: this backend has none). */
  switchKnowledgeBase?(knowledgeId: KnowledgeBaseRef, model?: string): Promise<unknown>;
  /** Before that switch: copies the uploads the new vector set lacks into it (all pages). */
  carryUploads?(knowledgeId: KnowledgeBaseRef, model?: string): Promise<CarriedUploads>;
}

export class TokenSearchDocuments implements SearchDocuments {
  private readonly baseURL: string;
  private readonly token: () => string | undefined;
  private readonly metrics: OutboundMetrics | undefined;
  private client: { token: string; client: SearchClient } | undefined;

  constructor(opts: { baseURL: string; token: () => string | undefined; metrics?: OutboundMetrics }) {
    this.baseURL = opts.baseURL;
    this.token = opts.token;
    this.metrics = opts.metrics;
  }

  private get c(): SearchClient {
    const token = this.token();
    if (!token) throw new Error("the internal token Secret is not there yet");
    if (this.client?.token !== token) {
      this.client = {
        token,
        client: new SearchClient({ baseURL: this.baseURL, token, ...(this.metrics ? { metrics: this.metrics } : {}) }),
      };
    }
    return this.client.client;
  }

  ensureKnowledgeBase(id: KnowledgeBaseRef, settings: KnowledgeBaseSettings) {
    return this.c.ensureKnowledgeBase(id, settings);
  }
  deleteKnowledgeBase(id: KnowledgeBaseRef) {
    return this.c.deleteKnowledgeBase(id);
  }
  upsertDocument(id: KnowledgeBaseRef, docsId: string, doc: DocumentInput) {
    return this.c.upsertDocument(id, docsId, doc);
  }
  deleteDocument(id: KnowledgeBaseRef, docsId: string) {
    return this.c.deleteDocument(id, docsId);
  }
  pruneDocuments(id: KnowledgeBaseRef, request: PruneRequest) {
    return this.c.pruneDocuments(id, request);
  }
  getKnowledgeBase(id: KnowledgeBaseRef) {
    return this.c.getKnowledgeBase(id);
  }
  switchKnowledgeBase(id: KnowledgeBaseRef, model?: string) {
    return this.c.switchKnowledgeBase(id, model);
  }
  carryUploads(id: KnowledgeBaseRef, model?: string) {
    return this.c.carryUploads(id, model);
  }
}
