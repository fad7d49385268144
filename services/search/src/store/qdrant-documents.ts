// Reading a knowledge base's documents on Qdrant. Listing: a scroll over the first chunk of each
// document (chunkIndex 0, payload-indexed, so one point per document), which carries the
// document's name, chunk count (totalChunks) and metadata; scrolls go in point-id order, so a
// page's position is a point id. One document's chunks: a scroll over its docsId. Both without
// vectors, 256 points a request at most.
import type { QdrantHttp } from "./qdrant-http.ts";
import { kbFilter } from "./qdrant-payload.ts";
import type { ChunkRecord, DocumentPage, DocumentSummary } from "./types.ts";

interface ScrollAnswer {
  points: { id: string | number; payload?: Partial<ChunkRecord> | null }[];
  next_page_offset?: string | number | null;
}

const PAGE = 256;

/** VectorStore.documentPage on one collection: `scan` first chunks from point `from` on. */
export async function pageDocuments(
  http: QdrantHttp,
  collection: string,
  knowledgeId: string,
  docsIdPrefix: string,
  from: string | undefined,
  scan: number,
): Promise<DocumentPage> {
  const filter = kbFilter(knowledgeId);
  filter.must.push({ key: "chunkIndex", match: { value: 0 } });
  const page = await http.call<ScrollAnswer>("scroll", "POST", `collections/${collection}/points/scroll`, {
    filter,
    limit: scan,
    with_payload: ["docsId", "docsName", "totalChunks", "extra"],
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
      at: String(id),
    });
  }
  const next = page.next_page_offset;
  return { documents, ...(next !== undefined && next !== null ? { next: String(next) } : {}) };
}

export async function listDocuments(
  http: QdrantHttp,
  collection: string,
  knowledgeId: string,
  docsIdPrefix: string,
): Promise<DocumentSummary[]> {
  const out: DocumentSummary[] = [];
  let from: string | undefined;
  do {
    const page = await pageDocuments(http, collection, knowledgeId, docsIdPrefix, from, PAGE);
    for (const { at: _at, ...doc } of page.documents) out.push(doc);
    from = page.next;
  } while (from !== undefined);
  return out.sort((a, b) => a.docsId.localeCompare(b.docsId));
}

/** VectorStore.documentChunks on one collection. */
export async function documentChunks(
  http: QdrantHttp,
  collection: string,
  knowledgeId: string,
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
        filter: kbFilter(knowledgeId, docsId),
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
