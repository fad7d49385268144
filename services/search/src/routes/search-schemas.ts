// The search API's response shapes for the route schemas (serialisation and /openapi.json): the
// {code, message, data} envelope of shared/clients/search-wire.ts, and its error form (data null).
import { schemaRegistry, errorResponses as sharedErrorResponses } from "@capstan/shared";
import { batchResponseSchema, searchResponseSchema } from "@capstan/shared/clients/search-wire";
import { z } from "zod";

/** Search's named schemas (components.schemas of its document). */
export const searchSchemas = schemaRegistry();

export const searchError = z.object({ code: z.int(), message: z.string(), data: z.null() });
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
