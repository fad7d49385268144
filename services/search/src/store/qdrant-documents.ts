// Listing a knowledge base's documents on Qdrant: a scroll over the first chunk of each document
// (chunkIndex 0, payload-indexed, so one point per document), which carries the document's name,
// chunk count (totalChunks) and metadata. Paged 256 points at a time, without vectors.
import type { QdrantHttp } from "./qdrant-http.ts";
import { kbFilter } from "./qdrant-payload.ts";
import type { ChunkRecord, DocumentSummary } from "./types.ts";

interface ScrollAnswer {
  points: { payload?: Partial<ChunkRecord> | null }[];
  next_page_offset?: string | number | null;
}

export async function listDocuments(
  http: QdrantHttp,
  collection: string,
  knowledgeId: string,
  docsIdPrefix: string,
): Promise<DocumentSummary[]> {
  const filter = kbFilter(knowledgeId);
  filter.must.push({ key: "chunkIndex", match: { value: 0 } });
  const out: DocumentSummary[] = [];
  let offset: string | number | null | undefined;
  do {
    const page: ScrollAnswer = await http.call<ScrollAnswer>(
      "scroll",
      "POST",
      `collections/${collection}/points/scroll`,
      {
        filter,
        limit: 256,
        with_payload: ["docsId", "docsName", "totalChunks", "extra"],
        with_vector: false,
        ...(offset !== undefined && offset !== null ? { offset } : {}),
      },
    );
    for (const { payload: p } of page.points) {
      if (typeof p?.docsId !== "string" || !p.docsId.startsWith(docsIdPrefix)) continue;
      out.push({
        docsId: p.docsId,
        docsName: p.docsName ?? p.docsId,
        chunks: p.totalChunks ?? 0,
        ...(p.extra ? { extra: p.extra } : {}),
      });
    }
    offset = page.next_page_offset;
  } while (offset !== undefined && offset !== null);
  return out.sort((a, b) => a.docsId.localeCompare(b.docsId));
}
