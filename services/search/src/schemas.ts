// Search's requests, schema first: one zod schema validates, types the handler and documents the
// API (the wire schemas of @capstan/shared/clients/search-wire and documents-wire, which clients
// parse answers with too). Every route's params, query and body are checked by searchValidator,
// which refuses a bad one with the search envelope's 400 naming the field (SEARCH_ERR_BODY_INVALID).
import { searchQuerySchema } from "@capstan/shared/clients/search-wire";
import type { FastifySchemaCompiler } from "fastify";
import { z } from "zod";
import type { SearchConfig } from "./config.ts";
import { SearchError } from "./errors.ts";

export function searchRequestSchema(cfg: SearchConfig["search"]) {
  return searchQuerySchema(cfg);
}

export function batchRequestSchema(cfg: SearchConfig["search"]) {
  return z.object({
    queries: z
      .array(z.unknown())
      .min(1, "must hold at least one query")
      .max(cfg.batchMaxQueries, `must hold at most ${cfg.batchMaxQueries} queries`),
  });
}

/** Path of the first issue ("knowledgeIds[0]", "text") and its message. */
export function describeIssue(error: z.ZodError, input: unknown, prefix = ""): string {
  const issue = error.issues[0];
  if (!issue) return "invalid";
  let value: unknown = input;
  for (const p of issue.path)
    value = value && typeof value === "object" ? (value as Record<PropertyKey, unknown>)[p] : undefined;
  const path = issue.path.reduce<string>(
    (acc, p) => (typeof p === "number" ? `${acc}[${p}]` : acc ? `${acc}.${String(p)}` : String(p)),
    prefix,
  );
  const message = issue.code === "invalid_type" && value === undefined ? "is required" : issue.message;
  return `${path || "body"}: ${message}`;
}

/**
 * One JSON object checked by its schema, or SEARCH_ERR_BODY_INVALID naming the field under
 * `prefix` ("queries[2].text", "query.limit"). Route schemas use it through searchValidator; the
 * batch route also checks each of its queries with it (a bad one fails alone, not the batch).
 */
export function parseObject<S extends z.ZodType>(schema: S, value: unknown, prefix = ""): z.infer<S> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new SearchError("SEARCH_ERR_BODY_INVALID", { detail: `${prefix || "body"}: must be a JSON object` });
  }
  const result = schema.safeParse(value);
  if (!result.success)
    throw new SearchError("SEARCH_ERR_BODY_INVALID", { detail: describeIssue(result.error, value, prefix) });
  return result.data;
}

/**
 * The validator compiler of search's route schemas (set on each plugin): zod, like the shared
 * default, but refusing in search's own envelope. Path params name their field bare ("docsId"),
 * the query string under "query.". With `emptyBody`, a request without a body is checked as that
 * body (the documents API's routes whose every field is optional).
 */
export function searchValidator(opts: { emptyBody?: object } = {}): FastifySchemaCompiler<z.ZodType> {
  return ({ schema, httpPart }) =>
    (value) => {
      const input = httpPart === "body" && value == null && opts.emptyBody ? opts.emptyBody : value;
      try {
        return { value: parseObject(schema, input, httpPart === "querystring" ? "query" : "") };
      } catch (err) {
        return { error: err as Error };
      }
    };
}
