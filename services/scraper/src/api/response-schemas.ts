// The scraper API's answers as zod schemas: fastify-type-provider-zod serialises every response
// through them (a field not listed here never leaves the process) and @fastify/swagger publishes
// them in /openapi.json, named in the scraper's own registry (components.schemas). Every error,
// whatever the route, is {success: false, error, code} with the status of the registry in errors.ts.
// The schemas the scraper's client reads too (errors, POST /scrape and /scrape/bulk) are its wire,
// defined once in @capstan/shared/clients/scraper-wire and registered here under their names.
import { describedErrorResponses, schemaRegistry } from "@capstan/shared";
import {
  bulkEntrySchema,
  bulkResponseSchema,
  pageMetadataSchema,
  scrapeDataSchema,
  scrapeResponseSchema,
  scraperErrorSchema,
} from "@capstan/shared/clients/scraper-wire";
import { z } from "zod";
import { ERRORS } from "../errors.ts";

export { bulkEntrySchema, bulkResponseSchema, scrapeDataSchema, scrapeResponseSchema, scraperErrorSchema };

/** The scraper's named schemas (components.schemas of its document). */
export const scraperSchemas = schemaRegistry();

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
scraperSchemas.add(scrapeDataSchema, { id: "ScrapeData", description: "One scraped page" });
scraperSchemas.add(scrapeResponseSchema, { id: "ScrapeResponse", description: "The answer of POST /scrape" });
scraperSchemas.add(bulkEntrySchema, {
  id: "BulkEntry",
  description: "One URL of a bulk scrape: its page, or its own error (the others still succeed)",
});
export type BulkEntry = z.output<typeof bulkEntrySchema>;
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
