// Reading a knowledge base's documents on Qdrant. Listing: a scroll over the first chunk of each
// document (chunkIndex 0, payload-indexed, so one point per document), which carries the
// document's name, chunk count (totalChunks) and metadata; scrolls go in point-id order, so a
// page's position is a point id. One document's chunks: a scroll over its docsId. Both without
// vectors, 256 points a request at most.
import type { QdrantHttp } from "./qdrant-http.ts";
import { type Filter, kbFilter, pruneFilters } from "./qdrant-payload.ts";
import {
  type ChunkRecord,
  type ChunkWithVector,
  type DocumentPage,
  type DocumentSummary,
  type IngestStamps,
  type PruneRule,
  pointIdOf,
  STAMP_FIELDS,
  stampsOf,
} from "./types.ts";

interface ScrollAnswer {
  points: { id: string | number; payload?: Partial<ChunkRecord> | null }[];
  next_page_offset?: string | number | null;
}

const PAGE = 256;

/** VectorStore.documentPage on one collection: `scan` first chunks from point `from` on. */
export async function pageDocuments(
  http: QdrantHttp,
  collection: string,
  key: string,
  docsIdPrefix: string,
  from: string | undefined,
  scan: number,
  source?: string,
): Promise<DocumentPage> {
  const filter = kbFilter(key);
  filter.must.push({ key: "chunkIndex", match: { value: 0 } });
  if (source !== undefined) filter.must.push({ key: "source", match: { value: source } });
  const page = await http.call<ScrollAnswer>("scroll", "POST", `collections/${collection}/points/scroll`, {
    filter,
    limit: scan,
    with_payload: ["docsId", "docsName", "totalChunks", "extra", ...STAMP_FIELDS],
    with_vector: false,
    ...(from !== undefined ? { offset: from } : {}),
  });
  const documents: DocumentPage["documents"] = [];
  for (const { id, payload: p } of page.points) {
    if (typeof p?.docsId !== "string" || !p.docsId.startsWith(docsIdPrefix)) continue;
    documents.push({
      docsId: p.docsId,
      docsName: p.docsName ?? p.docsId,
      chunks: p.totalChunks ?? 0,
      ...(p.extra ? { extra: p.extra } : {}),
      ...stampsOf(p),
      at: String(id),
    });
  }
  const next = page.next_page_offset;
  return { documents, ...(next !== undefined && next !== null ? { next: String(next) } : {}) };
}

export async function listDocuments(
  http: QdrantHttp,
  collection: string,
  key: string,
  docsIdPrefix: string,
): Promise<DocumentSummary[]> {
  const out: DocumentSummary[] = [];
  let from: string | undefined;
  do {
    const page = await pageDocuments(http, collection, key, docsIdPrefix, from, PAGE);
    for (const { at: _at, ...doc } of page.documents) out.push(doc);
    from = page.next;
  } while (from !== undefined);
  return out.sort((a, b) => a.docsId.localeCompare(b.docsId));
}

/** VectorStore.documentChunks on one collection. */
export async function documentChunks(
  http: QdrantHttp,
  collection: string,
  key: string,
  docsId: string,
): Promise<ChunkRecord[]> {
  const out: ChunkRecord[] = [];
  let offset: string | number | null | undefined;
  do {
    const page: ScrollAnswer = await http.call<ScrollAnswer>(
      "scroll",
      "POST",
      `collections/${collection}/points/scroll`,
      {
        filter: kbFilter(key, docsId),
        limit: PAGE,
        with_payload: true,
        with_vector: false,
        ...(offset !== undefined && offset !== null ? { offset } : {}),
      },
    );
    for (const { payload } of page.points) if (payload?.text !== undefined) out.push(payload as ChunkRecord);
    offset = page.next_page_offset;
  } while (offset !== undefined && offset !== null);
  return out.sort((a, b) => (a.chunkIndex ?? 0) - (b.chunkIndex ?? 0));
}

/** VectorStore.stampDocument on one collection: one payload update of the document's points. */
export async function stampPoints(
  http: QdrantHttp,
  collection: string,
  key: string,
  docsId: string,
  stamps: IngestStamps,
): Promise<void> {
  await http.call("set_payload", "POST", `collections/${collection}/points/payload?wait=true`, {
    payload: stampsOf(stamps),
    filter: kbFilter(key, docsId),
  });
}

export const countPoints = (http: QdrantHttp, collection: string, filter: Filter) =>
  http
    .call<{ count: number }>("count", "POST", `collections/${collection}/points/count`, { filter, exact: true })
    .then((r) => r.count);

/** VectorStore.pruneDocuments on one collection: per filter, its documents counted, then deleted. */
export async function prunePoints(http: QdrantHttp, collection: string, key: string, rule: PruneRule): Promise<number> {
  let deleted = 0;
  for (const filter of pruneFilters(key, rule)) {
    const firsts = { ...filter, must: [...filter.must, { key: "chunkIndex", match: { value: 0 } }] };
    const n = await countPoints(http, collection, firsts);
    if (n === 0) continue;
    await http.call("delete", "POST", `collections/${collection}/points/delete?wait=true`, { filter });
    deleted += n;
  }
  return deleted;
}

/** VectorStore.replaceDocument on one collection: the new points upserted, then the old ones left over deleted. */
export async function writePoints(
  http: QdrantHttp,
  collection: string,
  key: string,
  docsId: string,
  chunks: ChunkWithVector[],
  batch: number,
): Promise<void> {
  const ids = chunks.map((c) => pointIdOf(c.record.embeddingId));
  for (let i = 0; i < chunks.length; i += batch) {
    const points = chunks.slice(i, i + batch).map((c, j) => ({
      id: ids[i + j] as string,
      vector: Array.from(c.vector),
      payload: { ...c.record, knowledgeId: key, docsId },
    }));
    await http.call("upsert", "PUT", `collections/${collection}/points?wait=true`, { points });
  }
  // Then remove what the new version no longer has: no window where the document is missing.
  const filter = kbFilter(key, docsId);
  if (ids.length > 0) filter.must_not = [{ has_id: ids }];
  await http.call("delete", "POST", `collections/${collection}/points/delete?wait=true`, { filter });
}

/** A document's points of one collection deleted; how many there were. */
export async function deleteDocumentPoints(
  http: QdrantHttp,
  collection: string,
  key: string,
  docsId: string,
): Promise<number> {
  const filter = kbFilter(key, docsId);
  const found = await countPoints(http, collection, filter);
  if (found > 0) await http.call("delete", "POST", `collections/${collection}/points/delete?wait=true`, { filter });
  return found;
}
