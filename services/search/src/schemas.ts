// Request bodies, schema first: one zod schema validates, types the handler and documents the
// API. A bad body is a 400 naming the field.
import { KNOWLEDGE_ID_PATTERN } from "@capstan/shared/api";
import { z } from "zod";
import type { SearchConfig } from "./config.ts";
import { SearchError } from "./errors.ts";

export function searchRequestSchema(cfg: SearchConfig["search"]) {
  return z.object({
    knowledgeIds: z
      .array(z.string().regex(KNOWLEDGE_ID_PATTERN, "must be a knowledge id of the form kb_<id>"))
      .min(1, "must list at least one knowledge id")
      .max(cfg.maxKnowledgeIds, `must list at most ${cfg.maxKnowledgeIds} knowledge ids`),
    text: z
      .string()
      .max(cfg.maxTextLength, `must be at most ${cfg.maxTextLength} characters`)
      // Some character trim() keeps (\S in JavaScript), written so the published document says it
      // too: a JSON Schema pattern read by other regex engines (\uFEFF is not \s to all of them).
      .regex(/[^\s\uFEFF]/, "must be a non-empty string"),
    maxResults: z
      .int("must be an integer")
      .min(1, "must be at least 1")
      .max(cfg.maxResultsLimit, `must be at most ${cfg.maxResultsLimit}`)
      .default(10),
    minSimilarity: z.number().min(0, "must be within 0..1").max(1, "must be within 0..1").default(0.75),
  });
}

export function batchRequestSchema(cfg: SearchConfig["search"]) {
  return z.object({
    queries: z
      .array(z.unknown())
      .min(1, "must hold at least one query")
      .max(cfg.batchMaxQueries, `must hold at most ${cfg.batchMaxQueries} queries`),
  });
}

const docsIdPattern = /^[^\s/\\\p{Cc}][^/\\\p{Cc}]{0,511}$/u;

export const docsIdSchema = z.string().regex(docsIdPattern, "must be 1-512 characters without slashes or controls");
export const knowledgeIdParam = z.string().regex(KNOWLEDGE_ID_PATTERN, "must be a knowledge id of the form kb_<id>");

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

export function parseBody<S extends z.ZodType>(schema: S, body: unknown, prefix = ""): z.infer<S> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new SearchError("SEARCH_ERR_BODY_INVALID", { detail: `${prefix || "body"}: must be a JSON object` });
  }
  const result = schema.safeParse(body);
  if (!result.success)
    throw new SearchError("SEARCH_ERR_BODY_INVALID", { detail: describeIssue(result.error, body, prefix) });
  return result.data;
}
