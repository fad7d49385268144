// Ingestion behind the documents API: chunk a document with its knowledge base's chunking,
// embed the chunks (uncached, in slices, logging progress), and replace the document's chunks
// in one store call, so re-ingesting a changed document leaves nothing orphaned. A document
// whose content hash (name, text, metadata, chunking) is the one stored is not embedded again:
// a refresh only moves its stamps (refresh, fetchedAt), so a refresh of an unchanged site costs
// reads, not embedding. After a model
// change documents go to the vector set being built (with its model and chunking) until the
// caller switches to it; searches keep reading the serving one meanwhile (uploads made before the
// build are copied into it by carry-uploads.ts). Knowledge bases are addressed by store key
// (`<namespace>.<kb_id>`, see storeKey).

import { createHash } from "node:crypto";
import type { Logger } from "@capstan/shared";
import { chunkingSpec, embeddingSpec } from "@capstan/shared/api";
import type { DocumentInput } from "@capstan/shared/clients/documents-wire";
import type { z } from "zod";
import { chunkText } from "./chunking.ts";
import { DocumentLocks } from "./document-lock.ts";
import { CachedEmbedder, type Embedder } from "./embedding/provider.ts";
import { SearchError } from "./errors.ts";
import type { KnowledgeBases } from "./knowledge-bases.ts";
import type { SearchMetrics } from "./metrics.ts";
import {
  type ChunkWithVector,
  type CollectionInfo,
  embeddingIdFor,
  type PruneRule,
  stampsOf,
  storeKey,
  type VectorStore,
} from "./store/types.ts";

export interface KnowledgeBaseSettings {
  embedding?: unknown;
  chunking?: unknown;
}

export type { DocumentInput };

/** What an upsert did: the document's chunks, whether they were embedded now, the hash stored. */
export interface UpsertOutcome {
  chunks: number;
  embedded: boolean;
  contentHash: string;
}

/** The hash an upsert compares: of everything that decides the document's chunks and their payload. */
export function contentHashOf(doc: DocumentInput, chunking: CollectionInfo["chunking"]): string {
  const metadata = Object.entries(doc.metadata ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const input = JSON.stringify([chunking.size, chunking.overlap, doc.docsName, doc.origin ?? "", metadata, doc.text]);
  return `sha256:${createHash("sha256").update(input).digest("hex").slice(0, 32)}`;
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
  private readonly locks = new DocumentLocks();

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
  private settings(key: string, body: KnowledgeBaseSettings): CollectionInfo {
    const spec = this.d.kbs.resource(key)?.spec;
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
    return { knowledgeId: key, model, dimensions, chunking: chunk.data };
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
    if (await this.d.store.vectorSets(key)) return false;
    if (!(await this.d.store.renameCollection(knowledgeId, key))) return false;
    this.d.kbs.invalidate(key);
    this.d.logger.info({ knowledgeId, namespace }, "legacy collection adopted by its namespace");
    return true;
  }

  async ensure(key: string, body: KnowledgeBaseSettings): Promise<CollectionInfo> {
    const info = this.settings(key, body);
    await this.d.store.ensureCollection(info);
    this.d.kbs.invalidate(key);
    return info;
  }

  /** Makes the vector set being built serve; undefined when none is (or not of `model`). */
  async switchVectorSet(key: string, model?: string): Promise<CollectionInfo | undefined> {
    const info = await this.d.store.switchVectorSet(key, model);
    this.d.kbs.invalidate(key);
    if (info) this.d.logger.info({ key, model: info.model }, "vector set switched");
    return info;
  }

  async drop(key: string): Promise<boolean> {
    const existed = await this.d.store.dropCollection(key);
    this.d.kbs.invalidate(key);
    return existed;
  }

  /** Runs fn under the document's lock (see document-lock.ts): its check-and-write steps. */
  withDocument<T>(key: string, docsId: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(`${key}\0${docsId}`, fn);
  }

  /** Embeds document texts with `model` (uncached, in slices), logging the progress of long ones. */
  async embedTexts(model: string, texts: string[], log: Record<string, string>): Promise<Float32Array[]> {
    const embedder = this.d.embedders.get(model);
    if (!embedder) throw new SearchError("SEARCH_ERR_EMBEDDING", { detail: `model ${model} is not configured` });
    const vectors: Float32Array[] = [];
    const slice = this.d.sliceSize ?? 256;
    for (let i = 0; i < texts.length; i += slice) {
      const part = texts.slice(i, i + slice);
      try {
        // Documents bypass the query cache: they are embedded once and would only evict queries.
        vectors.push(
          ...(await (embedder instanceof CachedEmbedder ? embedder.embedUncached(part) : embedder.embed(part))),
        );
      } catch (err) {
        throw new SearchError("SEARCH_ERR_EMBEDDING", { detail: (err as Error).message }, { cause: err });
      }
      if (texts.length > slice) {
        this.d.logger.info({ ...log, done: Math.min(i + slice, texts.length), total: texts.length }, "ingest progress");
      }
    }
    return vectors;
  }

  /** Writes a document's chunks (a store failure is SEARCH_ERR_STORE). */
  async write(key: string, docsId: string, chunks: ChunkWithVector[]): Promise<void> {
    try {
      await this.d.store.replaceDocument(key, docsId, chunks);
    } catch (err) {
      throw new SearchError("SEARCH_ERR_STORE", { detail: "document write failed" }, { cause: err });
    }
  }

  /** Deletes a document from every vector set; chunks removed. */
  async deleteDocument(key: string, docsId: string): Promise<number> {
    const deleted = await this.withDocument(key, docsId, () => this.d.store.deleteDocument(key, docsId));
    this.d.kbs.invalidate(key);
    return deleted;
  }

  /** The end of a refresh: the documents of the vector set written to that go under the rule. */
  async prune(key: string, rule: PruneRule): Promise<number> {
    const deleted = await this.d.store.pruneDocuments(key, rule);
    this.d.kbs.invalidate(key);
    if (deleted > 0) this.d.logger.info({ key, deleted, refresh: rule.refresh }, "documents pruned");
    return deleted;
  }

  /** Chunks and embeds a document for a vector set. */
  private async prepare(info: CollectionInfo, docsId: string, doc: DocumentInput): Promise<ChunkWithVector[]> {
    const { knowledgeId: key } = info;
    const texts = chunkText(doc.text, info.chunking);
    const extra = Object.fromEntries(Object.entries(doc.metadata ?? {}).map(([k, v]) => [k, String(v)]));
    const stamps = stampsOf({
      source: doc.source,
      origin: doc.origin,
      fetchedAt: doc.fetchedAt,
      refresh: doc.refresh,
      contentHash: contentHashOf(doc, info.chunking),
    });
    const vectors = await this.embedTexts(info.model, texts, { key, docsId });
    return texts.map((text, chunkIndex) => ({
      vector: vectors[chunkIndex] as Float32Array,
      record: {
        embeddingId: embeddingIdFor(key, docsId, chunkIndex, text),
        knowledgeId: key,
        docsId,
        docsName: doc.docsName,
        chunkIndex,
        totalChunks: texts.length,
        text,
        ...(Object.keys(extra).length > 0 ? { extra } : {}),
        ...stamps,
      },
    }));
  }

  /**
   * The same content is stored in the vector set written to (same model, same hash, same
   * source, every chunk there): its stamps are moved to this write's and its chunk count
   * returned; undefined otherwise. Called under the document's lock.
   */
  private async unchanged(info: CollectionInfo, docsId: string, doc: DocumentInput, hash: string) {
    const sets = await this.d.store.vectorSets(info.knowledgeId);
    const writable = sets && (sets.building ?? sets.serving);
    if (!writable || writable.model !== info.model) return undefined;
    const records = await this.d.store.documentChunks(info.knowledgeId, docsId, sets.building ? "building" : "serving");
    const first = records[0];
    if (!first || first.contentHash !== hash || records.length !== first.totalChunks) return undefined;
    if (first.source !== doc.source) return undefined;
    const stamps = stampsOf({ refresh: doc.refresh, fetchedAt: doc.fetchedAt });
    if (Object.keys(stamps).length > 0) await this.d.store.stampDocument(info.knowledgeId, docsId, stamps);
    return records.length;
  }

  /** The vector set document writes go to: the one being built, else the serving one. */
  private async writable(key: string): Promise<CollectionInfo | undefined> {
    const sets = await this.d.store.vectorSets(key);
    return sets && (sets.building ?? sets.serving);
  }

  async upsert(key: string, docsId: string, doc: DocumentInput): Promise<UpsertOutcome> {
    const started = performance.now();
    this.d.metrics.ingestsInFlight.inc();
    try {
      let chunks: ChunkWithVector[] | undefined;
      // A model change may start a build (or a switch end one) while the text is embedded: the
      // chunks are written only where that model is written to, else prepared again for the
      // vector set now written to (a model that keeps changing is a 503 to retry).
      for (let attempt = 0; attempt < 3 && !chunks; attempt++) {
        const info = (await this.writable(key)) ?? (await this.ensure(key, {}));
        const hash = contentHashOf(doc, info.chunking);
        const kept = await this.withDocument(key, docsId, () => this.unchanged(info, docsId, doc, hash));
        if (kept !== undefined) {
          this.d.metrics.ingestedDocuments.inc({ outcome: "unchanged" });
          return { chunks: kept, embedded: false, contentHash: hash };
        }
        const prepared = await this.prepare(info, docsId, doc);
        chunks = await this.withDocument(key, docsId, async () => {
          const now = await this.writable(key);
          if (now && now.model !== info.model) return undefined;
          await this.write(key, docsId, prepared);
          return prepared;
        });
      }
      if (!chunks)
        throw new SearchError("SEARCH_ERR_STORE", { detail: "the embedding model changed during the write" });
      this.d.kbs.invalidate(key);
      this.d.metrics.ingestedChunks.inc(chunks.length);
      this.d.metrics.ingestedDocuments.inc({ outcome: "embedded" });
      const seconds = (performance.now() - started) / 1000;
      this.d.metrics.ingestDuration.observe(seconds);
      this.d.logger.info({ key, docsId, chunks: chunks.length, seconds }, "document ingested");
      const info = await this.writable(key);
      const contentHash = chunks[0]?.record.contentHash ?? (info ? contentHashOf(doc, info.chunking) : "");
      return { chunks: chunks.length, embedded: true, contentHash };
    } finally {
      this.d.metrics.ingestsInFlight.dec();
    }
  }
}
