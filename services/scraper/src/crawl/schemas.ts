// Bodies and answers of the Firecrawl v1 style routes: POST /crawl, GET/DELETE /crawl/{id},
// POST /batch/scrape, GET/DELETE /batch/scrape/{id}, their /errors, and POST /map. Field names
// and defaults are Firecrawl v1's where the reference is silent; where Capstan differs, the
// description says so (docs/scraper.md has the same list).
import { z } from "zod";
import { formatsSchema } from "../api/formats.ts";
import { scrapeDataSchema, scraperErrorSchema, scraperSchemas } from "../api/response-schemas.ts";
import { pageOptionsObject, url } from "../api/schemas.ts";

/** Firecrawl's scrapeOptions: what each page of a crawl or batch is scraped with. */
export const scrapeOptionsObject = pageOptionsObject
  .pick({ waitFor: true, onlyMainContent: true, headers: true, timeout: true, blockMedia: true })
  .extend({ formats: formatsSchema.default(["markdown"]) });
export const scrapeOptionsSchema = scrapeOptionsObject.prefault({});
export type ScrapeOptions = z.output<typeof scrapeOptionsObject>;

const patterns = z
  .array(z.string().min(1).max(1000))
  .max(100)
  .default([])
  .describe("Regular expressions (RE2 syntax) tested against each URL's path, as in Firecrawl v1");

export const crawlBodySchema = z.object({
  url,
  excludePaths: patterns,
  includePaths: patterns,
  maxDepth: z
    .int()
    .min(0)
    .max(1000)
    .default(10)
    .describe("Most path segments a URL may have below the start URL's path (Firecrawl v1's maxDepth)"),
  maxDiscoveryDepth: z
    .int()
    .min(0)
    .max(1000)
    .optional()
    .describe("Most links followed from the start URL (it and sitemap pages are 0)"),
  ignoreSitemap: z.boolean().default(false).describe("Do not read the site's sitemaps"),
  ignoreQueryParameters: z.boolean().default(false).describe("One page per path, whatever its query"),
  limit: z
    .int()
    .min(1)
    .max(100_000)
    .optional()
    .describe("Most pages fetched; default and ceiling SCRAPER_CRAWL_MAX_PAGES (a larger value is lowered to it)"),
  allowBackwardLinks: z.boolean().default(false).describe("Follow links outside the start URL's path"),
  allowExternalLinks: z.boolean().default(false).describe("Follow links to other sites"),
  allowSubdomains: z.boolean().default(false).describe("Follow links to subdomains of the start URL's host"),
  maxConcurrency: z
    .int()
    .min(1)
    .max(256)
    .optional()
    .describe("Pages of this job rendered at once (lowered to SCRAPER_JOB_CONCURRENCY)"),
  scrapeOptions: scrapeOptionsSchema,
});
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

export const jobStartedSchema = z.object({
  success: z.literal(true),
  id: z.uuid(),
  url: z.string().describe("Where to ask for the job's status and results"),
  invalidURLs: z.array(z.string()).optional().describe("Batch: URLs left out (ignoreInvalidURLs)"),
});
scraperSchemas.add(jobStartedSchema, { id: "JobStarted", description: "A crawl or batch scrape was started" });

export const jobStatusSchema = z.object({
  success: z.literal(true),
  status: z.enum(["scraping", "completed", "failed", "cancelled"]),
  total: z.int().describe("Pages the job will fetch, as far as it knows now"),
  completed: z.int().describe("Pages fetched, with or without success"),
  failed: z.int().describe("Pages that failed (GET .../errors lists them)"),
  creditsUsed: z.int().describe("Pages rendered (Firecrawl's credits: one per page)"),
  expiresAt: z.iso.datetime().describe("When the job and its results are dropped"),
  next: z.string().nullable().describe("The next page of results, or null when this answer reaches the last one"),
  warning: z
    .string()
    .optional()
    .describe(
      "Why the job stopped early or what holds it back (results byte budget, a capped robots.txt Crawl-delay, " +
        "a fetching time too short for that pace); several are joined by '; '",
    ),
  data: z.array(scrapeDataSchema).describe("Pages fetched successfully, in the order they finished"),
});
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

export const jobCancelledSchema = z.object({ success: z.literal(true), status: z.literal("cancelled") });
scraperSchemas.add(jobCancelledSchema, {
  id: "JobCancelled",
  description: "The job is cancelled and fetches nothing more",
});

export const mapResponseSchema = z.object({ success: z.literal(true), links: z.array(z.string()) });
scraperSchemas.add(mapResponseSchema, { id: "MapResponse", description: "URLs of a site" });
