// One interface for vector stores (embedded.ts in-process, qdrant.ts for Qdrant), with one
// contract suite (test/search/store-contract.ts) run on both. Scores are cosine similarity mapped
// to 0..1 the same way everywhere by cosineToScore (calibrated so that 0.75 means relevant);
// minScore is inclusive on both stores.
import { createHash } from "node:crypto";

/**
 * The key a knowledge base's vectors are stored under: its namespace and its id, `<namespace>.<kb_id>`
 * (a namespace is a DNS label and an id `kb_[a-z0-9_]`, so neither holds a dot and the key is
 * unambiguous). Two namespaces choosing the same knowledgeId never share vectors. Below (and in
 * the ingester and the stores) a parameter named `key` is this store key, and `knowledgeId` the
 * id clients know, except in the persisted records (CollectionInfo, ChunkRecord), whose
 * `knowledgeId` field holds the store key under the name it has always been stored with (Qdrant
 * payloads and the embedded store's files). Data written before knowledge bases were namespaced
 * sits under the bare id and is moved to the key by renameCollection (see Ingester.adoptLegacy).
 */
export function storeKey(namespace: string, knowledgeId: string): string {
  return `${namespace}.${knowledgeId}`;
}

/** The knowledge id clients know (kb_...) of a store key (a bare legacy id is returned as it is). */
export function plainKnowledgeId(key: string): string {
  const dot = key.indexOf(".");
  return dot < 0 ? key : key.slice(dot + 1);
}

/** What a knowledge base's collection remembers: the model that filled it and its chunking. */
export interface CollectionInfo {
  /** The store key (storeKey), stored under this name. */
  knowledgeId: string;
  model: string;
  dimensions: number;
  chunking: { size: number; overlap: number };
}

export interface ChunkRecord {
  embeddingId: string;
  /** The store key (storeKey), stored under this name (Qdrant's tenant field). */
  knowledgeId: string;
  docsId: string;
  docsName: string;
  chunkIndex: number;
  totalChunks: number;
  text: string;
  /** Caller-supplied document metadata (string values), kept with every chunk. */
  extra?: Record<string, string>;
  /** Of a document ingested from a KnowledgeBase source, on every chunk (see IngestStamps). */
  source?: string;
  contentHash?: string;
  origin?: string;
  fetchedAt?: string;
  refresh?: string;
}

/**
 * What search knows of a document ingested from a KnowledgeBase source: the source's id, a hash
 * of what was ingested, where and when its content was fetched, and the refresh that last wrote
 * or confirmed it (documents/registry of the documents API: search is their one authority).
 */
export type IngestStamps = Pick<ChunkRecord, "source" | "contentHash" | "origin" | "fetchedAt" | "refresh">;
export const STAMP_FIELDS = ["source", "contentHash", "origin", "fetchedAt", "refresh"] as const;

/** The stamps of a record, without undefined fields. */
export function stampsOf(r: IngestStamps): IngestStamps {
  const out: IngestStamps = {};
  for (const k of STAMP_FIELDS) if (r[k] !== undefined) out[k] = r[k];
  return out;
}

/** The end of a refresh (see the documents API's prune): which documents of a vector set go. */
export interface PruneRule {
  refresh: string;
  /** The KnowledgeBase's sources now: documents of any other source go. */
  sources: string[];
  /** Sources that completed this refresh: their documents it did not write or confirm go. */
  complete: string[];
  /** Documents written before documents carried their source: they go unless this refresh wrote them. */
  legacy: string[];
}

/** Whether a document (its first chunk's record) goes under a prune rule. */
export function prunable(r: Pick<ChunkRecord, "docsId" | "source" | "refresh">, rule: PruneRule): boolean {
  if (r.source === undefined) return rule.legacy.includes(r.docsId) && r.refresh !== rule.refresh;
  if (!rule.sources.includes(r.source)) return true;
  return rule.complete.includes(r.source) && r.refresh !== rule.refresh;
}

export interface ChunkWithVector {
  record: ChunkRecord;
  vector: Float32Array;
}

export interface VectorHit {
  record: ChunkRecord;
  /** Cosine similarity mapped to 0..1 by cosineToScore. */
  score: number;
}

export interface VectorQuery {
  /** Store keys of the knowledge bases searched (storeKey). */
  keys: string[];
  /**
   * The model the vector was embedded with. A search planned just before a vector set switch
   * still reads the vector set of that model (kept for a grace period after the switch) instead
   * of failing on the new one's dimensions. Absent: the serving vector set.
   */
  model?: string;
  vector: Float32Array;
  limit: number;
  /** Hits scoring below this (0..1) are not returned; a hit scoring exactly this is. */
  minScore: number;
}

/** How a knowledge base's vectors are stored, derived from its model; shown in its status. */
export interface CollectionLayout {
  backend: "embedded" | "qdrant";
  /** The physical collection (Qdrant: shared by every knowledge base of the same model). */
  collection: string;
  /** The payload value selecting this knowledge base's points in a shared collection. */
  tenant: string;
  vectorSize: number;
  distance: "Cosine";
  /** m 0 with payloadM set: one HNSW graph per tenant instead of a global one (Qdrant). */
  hnsw: { m: number; payloadM?: number; efConstruct: number; efSearch: number };
}

export interface CollectionStats {
  documents: number;
  chunks: number;
}

/** One document of a knowledge base as listed: its chunk count and the metadata of its first chunk. */
export interface DocumentSummary extends IngestStamps {
  docsId: string;
  docsName: string;
  chunks: number;
  extra?: Record<string, string>;
}

/**
 * One page of a vector set's documents, for walking all of them a bounded step at a time. `at` of
 * each document and `next` are positions (opaque: a docsId on the embedded store, a point id on
 * Qdrant); documentPage from a position starts with the document at it.
 */
export interface DocumentPage {
  documents: (DocumentSummary & { at: string })[];
  /** Where the next page starts; absent after the last one. */
  next?: string;
}

/**
 * A knowledge base's vector sets. A vector set is the knowledge base's vectors embedded by one
 * model (with their chunks and settings). `serving` answers searches; `building` (after a model or
 * dimensions change) receives every document write until switchVectorSet promotes it, so
 * searches never see a half-filled collection.
 */
export interface VectorSets {
  serving: CollectionInfo;
  building?: CollectionInfo;
}

/** Which of a knowledge base's vector sets a read goes to. */
export type VectorSetName = "serving" | "building";

/** How long a replaced vector set keeps answering searches planned before the switch. */
export const DEFAULT_RETIRE_GRACE_MS = 15_000;

/** Same model and vector size: the same vector set (chunking may change in place). */
export function sameModel(a: CollectionInfo, b: CollectionInfo): boolean {
  return a.model === b.model && a.dimensions === b.dimensions;
}

export interface VectorStore {
  readonly kind: "embedded" | "qdrant";
  /** Where and how this knowledge base's vectors are kept (no I/O). */
  layout(info: CollectionInfo): CollectionLayout;
  /**
   * Creates the collection (serving at once: there is nothing to answer from yet). Afterwards:
   * the serving model updates chunking in place and abandons a pending build; another model or
   * size starts (or keeps) an empty building vector set beside the serving one. Idempotent.
   */
  ensureCollection(info: CollectionInfo): Promise<void>;
  /** The serving vector set's settings (what searches use). */
  getCollection(key: string): Promise<CollectionInfo | undefined>;
  vectorSets(key: string): Promise<VectorSets | undefined>;
  /**
   * Makes the building vector set serve, in one atomic step, and retires the old one: it keeps
   * answering searches that name its model for a grace period, then its vectors are deleted.
   * Returns the new serving settings; undefined when nothing is being built (or not `model`).
   */
  switchVectorSet(key: string, model?: string): Promise<CollectionInfo | undefined>;
  /** Removes every vector set and all their vectors; false when there was none. */
  dropCollection(key: string): Promise<boolean>;
  /**
   * Moves every vector set of `from` (vectors, settings, counts) to the key `to`, which must have
   * none: the migration of data stored under a bare knowledge id. False when `from` has nothing.
   */
  renameCollection(from: string, to: string): Promise<boolean>;
  /**
   * Replaces every chunk of a document with these (none: deletes it), in the building
   * vector set when there is one, else the serving one. Idempotent.
   */
  replaceDocument(key: string, docsId: string, chunks: ChunkWithVector[]): Promise<void>;
  /** Removes the document from every vector set; number of chunks removed. */
  deleteDocument(key: string, docsId: string): Promise<number>;
  /** Sets stamps on every chunk of a document of the vector set written to (a refresh confirming it). */
  stampDocument(key: string, docsId: string, stamps: Pick<IngestStamps, "refresh" | "fetchedAt">): Promise<void>;
  /** Deletes the documents of the vector set written to that go under the rule; documents deleted. */
  pruneDocuments(key: string, rule: PruneRule): Promise<number>;
  /**
   * One page of the vector set written to (building, else serving): documents of `source` (absent:
   * all), from position `from`, at most `limit`, with their stamps.
   */
  ingestedPage(key: string, source: string | undefined, from: string | undefined, limit: number): Promise<DocumentPage>;
  /** The serving vector set's documents whose id starts with `docsIdPrefix`, by id. */
  documents(key: string, docsIdPrefix: string): Promise<DocumentSummary[]>;
  /**
   * Walks a vector set's documents: from position `from` (absent: the first), it looks at up to
   * `scan` documents and returns those whose id starts with `docsIdPrefix`. A vector set only
   * written to by deletes (the serving one during a build) is walked completely, each once.
   */
  documentPage(
    key: string,
    set: VectorSetName,
    docsIdPrefix: string,
    from: string | undefined,
    scan: number,
  ): Promise<DocumentPage>;
  /** One document's chunks in a vector set, by chunkIndex, without vectors; [] when it has none. */
  documentChunks(key: string, docsId: string, set: VectorSetName): Promise<ChunkRecord[]>;
  /** Counts of one vector set (default serving); undefined when it does not exist. */
  stats(key: string, set?: VectorSetName): Promise<CollectionStats | undefined>;
  /** Best hits across the listed knowledge bases, best first, at most limit. */
  query(q: VectorQuery): Promise<VectorHit[]>;
  /** Several queries in one call (Qdrant: one batch request). */
  queryBatch(qs: VectorQuery[]): Promise<VectorHit[][]>;
  close(): Promise<void>;
}

/**
 * The cosine at which relevant and unrelated passages separate for the shipped embedding model
 * (all-MiniLM-L6-v2), measured on the evaluation set (test/search/relevance/questions.yaml) by
 * `node bench/search/relevance.ts`: the middle of the cosine interval that best separates them
 * (highest recall + unanswerable-empty rate). It is the cosine that scores 0.75, the reference's
 * default minSimilarity; docs/search.md shows the measurement.
 */
export const RELEVANT_COSINE = 0.24;

/**
 * The one mapping of cosine similarity (-1..1) to a 0..1 score, used by both stores: piecewise
 * linear through (-1, 0), (0, 0.5), (RELEVANT_COSINE, 0.75) and (1, 1), so opposite, unrelated
 * (orthogonal) and identical keep their old 0, 0.5 and 1, and 0.75 means "relevant" for the shipped
 * model. Rounded to the six decimals the API returns, so that float32 noise (Qdrant scores a vector
 * against itself 0.99999994) cannot decide an inclusive threshold: a stored vector queried with
 * itself scores exactly 1 on both stores. Change the formula here (and its inverse below) and
 * both backends follow.
 */
export function cosineToScore(cos: number): number {
  const c = Math.min(1, Math.max(-1, cos));
  const s =
    c <= 0
      ? (c + 1) / 2
      : c <= RELEVANT_COSINE
        ? 0.5 + (0.25 * c) / RELEVANT_COSINE
        : 0.75 + (0.25 * (c - RELEVANT_COSINE)) / (1 - RELEVANT_COSINE);
  return Math.round(s * 1e6) / 1e6;
}

/** The inverse of cosineToScore before rounding: the cosine that scores exactly `score`. */
export function scoreToCosine(score: number): number {
  const s = Math.min(1, Math.max(0, score));
  if (s <= 0.5) return 2 * s - 1;
  if (s <= 0.75) return ((s - 0.5) * RELEVANT_COSINE) / 0.25;
  return RELEVANT_COSINE + ((s - 0.75) * (1 - RELEVANT_COSINE)) / 0.25;
}

/**
 * A raw cosine below every cosine that can score minScore or more: the pre-filter for stores that
 * filter on raw scores (Qdrant's score_threshold, which is strict and float32). Deliberately
 * loose by a few ulps; the exact inclusive test `score >= minScore` runs after cosineToScore.
 */
export function cosineFloorOf(minScore: number): number {
  return scoreToCosine(minScore - 0.5e-6) - 1e-6;
}

/** emb_<32 hex>: stable for the same chunk of the same document, so re-ingesting is idempotent. */
export function embeddingIdFor(key: string, docsId: string, chunkIndex: number, text: string): string {
  const h = createHash("sha256").update(`${key}\0${docsId}\0${chunkIndex}\0${text}`).digest("hex");
  return `emb_${h.slice(0, 32)}`;
}

/** The Qdrant point id (a UUID) of an embedding id. */
export function pointIdOf(embeddingId: string): string {
  const h = embeddingId.slice(4);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreError";
  }
}

/** Merges per-collection hit lists: best first, at most limit. */
export function mergeHits(lists: VectorHit[][], limit: number): VectorHit[] {
  return lists
    .flat()
    .sort((a, b) => b.score - a.score || a.record.embeddingId.localeCompare(b.record.embeddingId))
    .slice(0, limit);
}
