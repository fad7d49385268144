// Bodies and answers of the Firecrawl v1 style routes: POST /crawl, GET/DELETE /crawl/{id},
// POST /batch/scrape, GET/DELETE /batch/scrape/{id}, their /errors, and POST /map. Field names
// and defaults are Firecrawl v1's where the reference is silent; where Capstan differs, the
// description says so (docs/scraper.md has the same list).
import {
  crawlBodySchema,
  jobCancelledSchema,
  jobStartedSchema,
  jobStatusSchema,
  scrapeOptionsObject,
  scraperErrorSchema,
  url,
} from "@capstan/shared/clients/scraper-wire";
import { z } from "zod";
import { scraperSchemas } from "../api/response-schemas.ts";

// The crawl's body and its job's answers are the scraper's wire with its client, defined once in
// @capstan/shared/clients/scraper-wire and registered here under their names.
export {
  crawlBodySchema,
  jobCancelledSchema,
  jobStartedSchema,
  jobStatusSchema,
  scrapeOptionsObject,
  scrapeOptionsSchema,
} from "@capstan/shared/clients/scraper-wire";
export type ScrapeOptions = z.output<typeof scrapeOptionsObject>;

export type CrawlBody = z.output<typeof crawlBodySchema>;

export const batchBodySchema = scrapeOptionsObject.extend({
  urls: z.array(url).min(1, "at least one URL"),
  ignoreInvalidURLs: z
    .boolean()
    .default(false)
    .describe("Leave invalid URLs out (listed in invalidURLs) instead of refusing the request"),
  maxConcurrency: crawlBodySchema.shape.maxConcurrency,
});
export type BatchBody = z.output<typeof batchBodySchema>;

export const mapBodySchema = z.object({
  url,
  search: z.string().min(1).max(500).optional().describe("Only URLs containing this text (case-insensitive)"),
  ignoreSitemap: z
    .boolean()
    .default(false)
    .describe(
      "Do not read the site's sitemaps (Firecrawl's default is true: it has a search index; here the sitemap is the main source)",
    ),
  sitemapOnly: z.boolean().default(false).describe("Only URLs from the sitemaps: the page is not rendered"),
  includeSubdomains: z.boolean().default(false).describe("Keep URLs of subdomains of the start URL's host"),
  limit: z.int().min(1).max(30_000).default(5_000),
});
export type MapBody = z.output<typeof mapBodySchema>;

export const jobIdParams = z.object({ id: z.uuid({ error: "must be a job id (UUID)" }) });
export const jobPageQuery = z.object({
  skip: z.coerce.number().int().min(0).default(0).describe("Results to skip (the `next` URL sets it)"),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .optional()
    .describe("Most results in this answer (at most SCRAPER_JOB_PAGE_SIZE)"),
});

scraperSchemas.add(jobStartedSchema, { id: "JobStarted", description: "A crawl or batch scrape was started" });
scraperSchemas.add(jobStatusSchema, { id: "JobStatus", description: "Progress and one page of results of a job" });

export const jobErrorsSchema = z.object({
  success: z.literal(true),
  errors: z.array(
    z.object({
      id: z.string(),
      timestamp: z.iso.datetime(),
      url: z.string(),
      error: z.string(),
      code: scraperErrorSchema.shape.code,
    }),
  ),
  robotsBlocked: z.array(z.string()).describe("URLs robots.txt disallowed (not fetched)"),
});
scraperSchemas.add(jobErrorsSchema, { id: "JobErrors", description: "Pages of a job that failed or were not fetched" });

scraperSchemas.add(jobCancelledSchema, {
  id: "JobCancelled",
  description: "The job is cancelled and fetches nothing more",
});

export const mapResponseSchema = z.object({ success: z.literal(true), links: z.array(z.string()) });
scraperSchemas.add(mapResponseSchema, { id: "MapResponse", description: "URLs of a site" });
