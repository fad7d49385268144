// Ingestion behind the documents API: chunk a document with its knowledge base's chunking,
// embed the chunks (uncached, in slices, logging progress), and replace the document's chunks
// in one store call, so re-ingesting a changed document leaves nothing orphaned. After a model
// change documents go to the generation being built (with its model and chunking) until the
// caller switches to it; searches keep reading the serving one meanwhile. Knowledge bases are
// addressed by store key (`<namespace>.<kb_id>`, see storeKey).

import type { Logger } from "@capstan/shared";
import { chunkingSpec, embeddingSpec } from "@capstan/shared/api";
import type { z } from "zod";
import { chunkText } from "./chunking.ts";
import { CachedEmbedder, type Embedder } from "./embedding/provider.ts";
import { SearchError } from "./errors.ts";
import type { KnowledgeBases } from "./knowledge-bases.ts";
import type { SearchMetrics } from "./metrics.ts";
import {
  type ChunkWithVector,
  type CollectionInfo,
  embeddingIdFor,
  storeKey,
  type VectorStore,
} from "./store/types.ts";

export interface KnowledgeBaseSettings {
  embedding?: unknown;
  chunking?: unknown;
}

export interface DocumentInput {
  docsName: string;
  text: string;
  metadata?: Record<string, string | number | boolean> | undefined;
}

export interface IngesterDeps {
  kbs: KnowledgeBases;
  store: VectorStore;
  embedders: Map<string, Embedder>;
  metrics: SearchMetrics;
  logger: Logger;
  sliceSize?: number;
}

type EmbeddingSpec = z.infer<typeof embeddingSpec>;

export class Ingester {
  private readonly d: IngesterDeps;

  constructor(deps: IngesterDeps) {
    this.d = deps;
  }

  private embedderName(spec: EmbeddingSpec): string {
    const name = spec.provider === "openai" ? `openai:${spec.model}` : `local:${spec.model}`;
    if (!this.d.embedders.has(name)) {
      const have = [...this.d.embedders.keys()].join(", ");
      throw new SearchError("SEARCH_ERR_BODY_INVALID", {
        detail: `embedding: model ${name} is not available here (available: ${have})`,
      });
    }
    return name;
  }

  /** Collection settings from a request body, else the KnowledgeBase resource, else defaults. */
  private settings(knowledgeId: string, body: KnowledgeBaseSettings): CollectionInfo {
    const spec = this.d.kbs.resource(knowledgeId)?.spec;
    const emb = embeddingSpec.safeParse(body.embedding ?? spec?.embedding ?? {});
    if (!emb.success) {
      throw new SearchError("SEARCH_ERR_BODY_INVALID", { detail: `embedding: ${emb.error.issues[0]?.message}` });
    }
    const chunk = chunkingSpec.safeParse(body.chunking ?? spec?.chunking ?? {});
    if (!chunk.success || chunk.data.overlap >= chunk.data.size) {
      const detail = chunk.success ? "overlap must be smaller than size" : chunk.error.issues[0]?.message;
      throw new SearchError("SEARCH_ERR_BODY_INVALID", { detail: `chunking: ${detail}` });
    }
    const model = this.embedderName(emb.data);
    const dimensions = (this.d.embedders.get(model) as Embedder).dimensions;
    return { knowledgeId, model, dimensions, chunking: chunk.data };
  }

  /**
   * The migration of data written before knowledge bases were namespaced (stored under the bare
   * id): when `key` has no collection, the bare id has one, and exactly one namespace has a
   * KnowledgeBase with that id (this one), that collection is renamed to `key` in place (Qdrant:
   * its points re-tagged and its registry entry moved). With the id claimed in several namespaces
   * the old data's owner is unknown: nothing is adopted and each is re-ingested from its sources.
   */
  async adoptLegacy(namespace: string, knowledgeId: string): Promise<boolean> {
    const key = storeKey(namespace, knowledgeId);
    if (this.d.kbs.keyOf(namespace, knowledgeId) !== key || this.d.kbs.namespacesWith(knowledgeId) !== 1) return false;
    if (await this.d.store.generations(key)) return false;
    if (!(await this.d.store.renameCollection(knowledgeId, key))) return false;
    this.d.kbs.invalidate(key);
    this.d.logger.info({ knowledgeId, namespace }, "legacy collection adopted by its namespace");
    return true;
  }

  async ensure(knowledgeId: string, body: KnowledgeBaseSettings): Promise<CollectionInfo> {
    const info = this.settings(knowledgeId, body);
    await this.d.store.ensureCollection(info);
    this.d.kbs.invalidate(knowledgeId);
    return info;
  }

  /** Makes the generation being built serve; undefined when none is (or not of `model`). */
  async switchGeneration(knowledgeId: string, model?: string): Promise<CollectionInfo | undefined> {
    const info = await this.d.store.switchGeneration(knowledgeId, model);
    this.d.kbs.invalidate(knowledgeId);
    if (info) this.d.logger.info({ knowledgeId, model: info.model }, "generation switched");
    return info;
  }

  async drop(knowledgeId: string): Promise<boolean> {
    const existed = await this.d.store.dropCollection(knowledgeId);
    this.d.kbs.invalidate(knowledgeId);
    return existed;
  }

  async upsert(knowledgeId: string, docsId: string, doc: DocumentInput): Promise<number> {
    const started = performance.now();
    this.d.metrics.ingestsInFlight.inc();
    try {
      const gens = await this.d.store.generations(knowledgeId);
      const info = gens ? (gens.building ?? gens.serving) : await this.ensure(knowledgeId, {});
      const embedder = this.d.embedders.get(info.model);
      if (!embedder) throw new SearchError("SEARCH_ERR_EMBEDDING", { detail: `model ${info.model} is not configured` });
      const texts = chunkText(doc.text, info.chunking);
      const extra = Object.fromEntries(Object.entries(doc.metadata ?? {}).map(([k, v]) => [k, String(v)]));
      const chunks: ChunkWithVector[] = [];
      const slice = this.d.sliceSize ?? 256;
      for (let i = 0; i < texts.length; i += slice) {
        const part = texts.slice(i, i + slice);
        let vectors: Float32Array[];
        try {
          // Documents bypass the query cache: they are embedded once and would only evict queries.
          vectors = await (embedder instanceof CachedEmbedder ? embedder.embedUncached(part) : embedder.embed(part));
        } catch (err) {
          throw new SearchError("SEARCH_ERR_EMBEDDING", { detail: (err as Error).message }, { cause: err });
        }
        part.forEach((text, j) => {
          const chunkIndex = i + j;
          chunks.push({
            vector: vectors[j] as Float32Array,
            record: {
              embeddingId: embeddingIdFor(knowledgeId, docsId, chunkIndex, text),
              knowledgeId,
              docsId,
              docsName: doc.docsName,
              chunkIndex,
              totalChunks: texts.length,
              text,
              ...(Object.keys(extra).length > 0 ? { extra } : {}),
            },
          });
        });
        if (texts.length > slice) {
          this.d.logger.info(
            { knowledgeId, docsId, done: Math.min(i + slice, texts.length), total: texts.length },
            "ingest progress",
          );
        }
      }
      try {
        await this.d.store.replaceDocument(knowledgeId, docsId, chunks);
      } catch (err) {
        throw new SearchError("SEARCH_ERR_STORE", { detail: "document write failed" }, { cause: err });
      }
      this.d.kbs.invalidate(knowledgeId);
      this.d.metrics.ingestedChunks.inc(chunks.length);
      const seconds = (performance.now() - started) / 1000;
      this.d.metrics.ingestDuration.observe(seconds);
      this.d.logger.info({ knowledgeId, docsId, chunks: chunks.length, seconds }, "document ingested");
      return chunks.length;
    } finally {
      this.d.metrics.ingestsInFlight.dec();
    }
  }
}
