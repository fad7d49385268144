// The search API's wire shapes (reference 2.6-2.8), defined once: the search service produces them,
// and every client (the gateway's retrieval, the operator's ingestion, the standalone launcher)
// reads them through SearchClient, which checks answers against these schemas.
import { z } from "zod";
import { KNOWLEDGE_ID_PATTERN } from "../api/common.ts";

/** The limits search is configured with (its config's `search` section). */
export interface SearchLimits {
  maxKnowledgeIds: number;
  maxTextLength: number;
  maxResultsLimit: number;
}

/**
 * One knowledge search (2.6), as search validates it with its configured limits; search fills the
 * defaults (maxResults 10, minSimilarity 0.75). A bad field is a 400 naming it.
 */
export function searchQuerySchema(limits: SearchLimits) {
  return z.object({
    knowledgeIds: z
      .array(z.string().regex(KNOWLEDGE_ID_PATTERN, "must be a knowledge id of the form kb_<id>"))
      .min(1, "must list at least one knowledge id")
      .max(limits.maxKnowledgeIds, `must list at most ${limits.maxKnowledgeIds} knowledge ids`),
    text: z
      .string()
      .max(limits.maxTextLength, `must be at most ${limits.maxTextLength} characters`)
      // Some character trim() keeps (\S in JavaScript), written so the published document says it
      // too: a JSON Schema pattern read by other regex engines (\uFEFF is not \s to all of them).
      .regex(/[^\s\uFEFF]/, "must be a non-empty string"),
    maxResults: z
      .int("must be an integer")
      .min(1, "must be at least 1")
      .max(limits.maxResultsLimit, `must be at most ${limits.maxResultsLimit}`)
      .default(10),
    minSimilarity: z.number().min(0, "must be within 0..1").max(1, "must be within 0..1").default(0.75),
  });
}
/** What a client sends (the defaults may be left out). */
export type SearchQuery = z.input<ReturnType<typeof searchQuerySchema>>;

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

/** The envelope of an error: code is the HTTP status, data is null. */
export const errorEnvelopeSchema = z.object({ code: z.int(), message: z.string(), data: z.null() });

const anyEnvelope = envelopeSchema(z.unknown());
/** An envelope whose data is a T (null on error). */
export type Envelope<T> = Omit<z.infer<typeof anyEnvelope>, "data"> & { data: T | null };

export const searchResponseSchema = envelopeSchema(z.array(searchResultSchema));
/** The batch endpoint answers one envelope per query, in order, inside the outer envelope. */
export const batchResponseSchema = envelopeSchema(z.array(searchResponseSchema));
