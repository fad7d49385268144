// Uploads carried across an embedding-model change. A new model's vector set is filled from the
// KnowledgeBase's sources; the documents uploaded through the public documents API before the
// build started are only in the serving vector set. Before the switch, the caller (the operator,
// the standalone launcher) walks them a page at a time: each upload missing from the building
// vector set has its chunks read from the serving one, their texts embedded again with the new
// model (vectors of two models are not comparable) and written there with the same chunk
// records (name, chunk indexes, metadata: format, uploadedAt, title...). Idempotent: what the
// building vector set already holds (copied by an earlier call, or uploaded again during the
// build, which is newer) is skipped. The last check and the write happen under the document's
// lock (document-lock.ts) after the embedding, so an upload or a delete made meanwhile wins.
import { SearchError } from "./errors.ts";
import type { Ingester } from "./ingest.ts";
import { UPLOAD_PREFIX } from "./routes/public-documents.ts";
import { type ChunkRecord, type CollectionInfo, plainKnowledgeId, type VectorStore } from "./store/types.ts";

export interface CarryDeps {
  ingester: Ingester;
  store: VectorStore;
}

export interface CarryRequest {
  /** The model being built (absent: whichever is). */
  model?: string | undefined;
  /** Where this page starts: the previous answer's `next` (absent: the first page). */
  from?: string | undefined;
  /** Uploads looked at in this call at most. */
  limit: number;
}

export interface CarryPage {
  model: string;
  /** Uploads of the serving vector set looked at in this call. */
  uploads: number;
  /** Of them, those copied now, and their chunks. */
  carried: number;
  chunks: number;
  /** Call again with from = next; absent: every upload has been looked at. */
  next?: string;
}

/** Documents a page looks at (store reads only; the uploads among them are handled `limit` at a time). */
const SCAN = 256;

/** One page of the carry; the knowledge base is a store key. */
export async function carryUploads(d: CarryDeps, key: string, req: CarryRequest): Promise<CarryPage> {
  const sets = await d.store.vectorSets(key);
  const target = sets?.building;
  if (!sets || !target || (req.model !== undefined && target.model !== req.model)) {
    // Nothing being built and that model serving (a repeated call after the switch): nothing to do.
    if (sets && !target && (req.model === undefined || req.model === sets.serving.model)) {
      return { model: sets.serving.model, uploads: 0, carried: 0, chunks: 0 };
    }
    throw notBuilding(key, req.model);
  }
  // A store that cannot select uploads by id prefix (Qdrant) looks at every document of the page:
  // it reads more than `limit` at once (no vectors, one request) so that a knowledge base of many
  // source documents and few uploads takes few calls; only `limit` uploads are handled, and the
  // next call starts at the first one left.
  const page = await d.store.documentPage(key, "serving", UPLOAD_PREFIX, req.from, Math.max(req.limit, SCAN));
  const mine = page.documents.slice(0, req.limit);
  const next = page.documents[req.limit]?.at ?? page.next;
  let carried = 0;
  let chunks = 0;
  for (const doc of mine) {
    const n = await carryOne(d, target, doc.docsId);
    if (n > 0) {
      carried += 1;
      chunks += n;
    }
  }
  return { model: target.model, uploads: mine.length, carried, chunks, ...(next !== undefined ? { next } : {}) };
}

function notBuilding(key: string, model: string | undefined): SearchError {
  return new SearchError("SEARCH_ERR_NOT_FOUND", {
    detail: `no vector set ${model ? `of model ${model} ` : ""}being built for ${plainKnowledgeId(key)}`,
  });
}

const inBuilding = async (d: CarryDeps, key: string, docsId: string) =>
  (await d.store.documentChunks(key, docsId, "building")).length > 0;

const sameChunks = (a: ChunkRecord[], b: ChunkRecord[]) =>
  a.length === b.length && a.every((r, i) => r.embeddingId === b[i]?.embeddingId);

/** Copies one upload into the building vector set; its chunks, or 0 when it was skipped. */
async function carryOne(d: CarryDeps, target: CollectionInfo, docsId: string): Promise<number> {
  const { knowledgeId: key } = target;
  if (await inBuilding(d, key, docsId)) return 0;
  const records = await d.store.documentChunks(key, docsId, "serving");
  if (records.length === 0) return 0; // deleted since the page was read
  const texts = records.map((r) => r.text);
  const vectors = await d.ingester.embedTexts(target.model, texts, { key, docsId, carry: target.model });
  return d.ingester.withDocument(key, docsId, async () => {
    const sets = await d.store.vectorSets(key);
    if (sets?.building?.model !== target.model) throw notBuilding(key, target.model); // switched or abandoned
    // Uploaded again meanwhile (newer), or deleted meanwhile (from both vector sets): theirs wins.
    if (await inBuilding(d, key, docsId)) return 0;
    if (!sameChunks(await d.store.documentChunks(key, docsId, "serving"), records)) return 0;
    await d.ingester.write(
      key,
      docsId,
      records.map((record, i) => ({ record, vector: vectors[i] as Float32Array })),
    );
    // The lock is this process's: a delete through another replica between the check and the
    // write shows here, and the copy is taken back (a later delete reaches both vector sets).
    if (!sameChunks(await d.store.documentChunks(key, docsId, "serving"), records)) {
      await d.store.deleteDocument(key, docsId);
      return 0;
    }
    return records.length;
  });
}
