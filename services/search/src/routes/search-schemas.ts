// The search API's response shapes for the route schemas (serialisation and /openapi.json): the
// {code, message, data} envelope of shared/clients/search-wire.ts, and its error form (data null).
import { schemaRegistry, errorResponses as sharedErrorResponses } from "@capstan/shared";
import { uploadListSchema } from "@capstan/shared/clients/documents-wire";
import { batchResponseSchema, errorEnvelopeSchema, searchResponseSchema } from "@capstan/shared/clients/search-wire";
import { z } from "zod";

/** Search's named schemas (components.schemas of its document). */
export const searchSchemas = schemaRegistry();

export const searchError = errorEnvelopeSchema;
searchSchemas.add(searchError, {
  id: "SearchError",
  description: "The search envelope of an error: code is the HTTP status, data is null",
});
export const searchResponse = searchResponseSchema;
searchSchemas.add(searchResponse, { id: "SearchResponse", description: "The search envelope of a result list" });
export const batchResponse = batchResponseSchema;
searchSchemas.add(batchResponse, {
  id: "BatchSearchResponse",
  description: "One envelope per query, in order, inside the outer envelope",
});

/** The batch body as documented (each query is validated on its own, so a bad one fails alone). */
export function batchDoc(single: z.ZodType, maxQueries: number) {
  return z.object({ queries: z.array(single).min(1).max(maxQueries) });
}

/** Route `response` entries for error statuses: the envelope with data null. */
export function errorResponses<S extends number>(...statuses: S[]) {
  return sharedErrorResponses(searchError, ...statuses);
}

const envelope = <T extends z.ZodType>(data: T) => z.object({ code: z.literal(200), message: z.string(), data });

export const documentResponse = envelope(
  z.object({
    knowledgeId: z.string(),
    name: z.string(),
    format: z.enum(["markdown", "text", "html", "pdf"]),
    chunks: z.int().min(0).describe("chunks the document was split into"),
    title: z.string().optional().describe("the document's own title (PDF Info, HTML <title>)"),
  }),
);
searchSchemas.add(documentResponse, { id: "DocumentResponse", description: "An uploaded document, as ingested" });

export const documentDeletedResponse = envelope(
  z.object({
    knowledgeId: z.string(),
    name: z.string(),
    deleted: z.int().min(0).describe("chunks removed (0: there was no such document)"),
  }),
);
searchSchemas.add(documentDeletedResponse, { id: "DocumentDeletedResponse", description: "A deleted document" });

export const documentListResponse = envelope(uploadListSchema);
searchSchemas.add(documentListResponse, {
  id: "DocumentListResponse",
  description: "The documents uploaded to a knowledge base, and its counts",
});
