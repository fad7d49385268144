// The scraper API's answers as zod schemas: fastify-type-provider-zod serialises every response
// through them (a field not listed here never leaves the process) and @fastify/swagger publishes
// them in /openapi.json, named in the scraper's own registry (components.schemas). Every error,
// whatever the route, is {success: false, error, code} with the status of the registry in errors.ts.
import { describedErrorResponses, schemaRegistry } from "@capstan/shared";
import { z } from "zod";
import { pageMetadataSchema } from "../content/metadata.ts";
import { ERRORS, type ErrorCode } from "../errors.ts";

/** The scraper's named schemas (components.schemas of its document). */
export const scraperSchemas = schemaRegistry();

export const scraperErrorSchema = z.object({
  success: z.literal(false),
  error: z.string().describe("What went wrong, for a human"),
  code: z.enum(Object.keys(ERRORS) as [ErrorCode, ...ErrorCode[]]).describe("The error's code (stable)"),
});
scraperSchemas.add(scraperErrorSchema, {
  id: "ScraperError",
  description: "Every error of the scraper API: the HTTP status goes with the code",
});

/**
 * Route `response` entries for error statuses, all in the {success:false,error,code} shape, each
 * described by the registry's codes of that status ("BLOCKED_TARGET: target blocked by SSRF
 * policy: {detail}"), so the document says what a 403 or a 415 means here.
 */
export function errorResponses<S extends number>(...statuses: S[]) {
  const describe = (status: number) =>
    Object.entries(ERRORS)
      .filter(([, e]) => e.status === status)
      .map(([code, e]) => `${code}: ${e.message}`)
      .join("; ");
  return describedErrorResponses(
    scraperErrorSchema,
    Object.fromEntries(statuses.map((s) => [s, describe(s) || undefined])) as Record<S, string | undefined>,
  );
}

scraperSchemas.add(pageMetadataSchema, { id: "PageMetadata", description: "Metadata of the rendered page" });

// Without `formats`, markdown, html and screenshot are always there (the reference's answer);
// with it, exactly the formats asked for (api/formats.ts).
export const scrapeDataSchema = z.object({
  markdown: z.string().optional().describe("The page as Markdown (always there without formats)"),
  html: z
    .string()
    .nullable()
    .optional()
    .describe(
      "Without formats: the rendered page, null when pageOptions.includeHtml is false. With formats: the cleaned HTML the Markdown is made from",
    ),
  rawHtml: z.string().optional().describe("The rendered page as it is (formats: rawHtml)"),
  links: z.array(z.string()).optional().describe("The page's http(s) links, absolute (formats: links)"),
  screenshot: z
    .string()
    .nullable()
    .optional()
    .describe(
      "Without formats: base64 PNG, or null when pageOptions.screenshot is false. With formats: a data:image/png;base64 URL",
    ),
  metadata: pageMetadataSchema,
  extracted: z
    .record(z.string(), z.union([z.string(), z.null(), z.array(z.string())]))
    .optional()
    .describe("Extractor results by name, when extractors were given"),
  llm_extraction: z.unknown().optional().describe("The LLM extraction's result, when extractorOptions asked for it"),
});
scraperSchemas.add(scrapeDataSchema, { id: "ScrapeData", description: "One scraped page" });

export const scrapeResponseSchema = z.object({ success: z.literal(true), data: scrapeDataSchema });
scraperSchemas.add(scrapeResponseSchema, { id: "ScrapeResponse", description: "The answer of POST /scrape" });

export const bulkEntrySchema = z.discriminatedUnion("success", [
  z.object({ url: z.string(), success: z.literal(true), data: scrapeDataSchema }),
  z.object({
    url: z.string(),
    success: z.literal(false),
    error: z.string(),
    code: scraperErrorSchema.shape.code,
    status: z.int().describe("The HTTP status this URL alone would have had"),
  }),
]);
scraperSchemas.add(bulkEntrySchema, {
  id: "BulkEntry",
  description: "One URL of a bulk scrape: its page, or its own error (the others still succeed)",
});
export type BulkEntry = z.output<typeof bulkEntrySchema>;

export const bulkResponseSchema = z.object({
  success: z.literal(true),
  total: z.int(),
  succeeded: z.int(),
  failed: z.int(),
  data: z.array(bulkEntrySchema).describe("One entry per URL, in the order given"),
});
scraperSchemas.add(bulkResponseSchema, { id: "BulkResponse", description: "The answer of POST /scrape/bulk" });

const webResultSchema = z.object({
  url: z.string(),
  title: z.string(),
  description: z.string(),
  engine: z.string().optional(),
  page: bulkEntrySchema.optional().describe("The scraped page, when the request set scrape"),
});
export const webSearchResponseSchema = z.object({ success: z.literal(true), data: z.array(webResultSchema) });
scraperSchemas.add(webSearchResponseSchema, {
  id: "WebSearchResponse",
  description: "The answer of POST /search: results of the metasearch service, best first",
});

export const healthResponseSchema = z.object({
  status: z.literal("ok"),
  service: z.literal("capstan-scraper"),
  uptimeSeconds: z.int(),
  renderer: z.enum(["ready", "not ready"]),
  queue: z.object({ running: z.int(), queued: z.int(), maxQueued: z.int() }),
});
scraperSchemas.add(healthResponseSchema, {
  id: "Health",
  description: "Liveness: answered while the process runs, whatever the renderer's state",
});
