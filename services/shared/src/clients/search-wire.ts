// The search API's wire shapes (reference 2.6-2.8), defined once: the search service produces them,
// and every client (the gateway's retrieval, the operator's ingestion, the standalone launcher)
// reads them through SearchClient, which checks answers against these schemas.
import { z } from "zod";

/** One knowledge search (2.6); search fills the defaults (maxResults 10, minSimilarity 0.75). */
export interface SearchQuery {
  knowledgeIds: string[];
  text: string;
  maxResults?: number;
  minSimilarity?: number;
}

/** One search result (2.8). */
export const searchResultSchema = z
  .object({
    knowledgeId: z.string(),
    docsName: z.string(),
    docsId: z.string(),
    embeddingId: z.string(),
    text: z.string(),
    score: z.number(),
    rerankedScore: z.number(),
    source: z.string(),
    metadata: z
      .object({
        knowledgeId: z.string(),
        docsId: z.string(),
        docsName: z.string(),
        chunkIndex: z.int(),
        totalChunks: z.int(),
      })
      .catchall(z.union([z.string(), z.number(), z.boolean()])),
  })
  .loose();
export type SearchResult = z.infer<typeof searchResultSchema>;

/** The response envelope of every search endpoint (2.7): data is null on error. */
export function envelopeSchema<T extends z.ZodType>(data: T) {
  return z.object({ code: z.number(), message: z.string(), data: data.nullable() });
}

export const searchResponseSchema = envelopeSchema(z.array(searchResultSchema));
/** The batch endpoint answers one envelope per query, in order, inside the outer envelope. */
export const batchResponseSchema = envelopeSchema(z.array(searchResponseSchema));
