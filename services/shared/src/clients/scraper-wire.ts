// The scraper API's wire shapes, defined once: the scraper's routes declare the bodies and answers
// of POST /scrape, POST /scrape/bulk, POST /crawl, GET and DELETE /crawl/{id} with these schemas
// (Fastify's zod type provider validates requests and serialises answers with them; the scraper
// registers them under their names in its OpenAPI document), and ScraperClient takes its types
// from them and parses every answer with them instead of declaring its types again. Unknown
// request fields are ignored so Firecrawl clients that send more options keep working.
import { z } from "zod";

// The scraper's error codes, in its error registry's order (services/scraper/src/errors.ts gives
// each its status and message, and its typecheck fails when the two lists differ).
export const SCRAPER_ERROR_CODES = [
  "BAD_REQUEST",
  "BAD_URL",
  "BAD_SELECTOR",
  "UNAUTHORIZED",
  "BLOCKED_TARGET",
  "NOT_FOUND",
  "FIRECRAWL_UNSUPPORTED",
  "JOB_NOT_FOUND",
  "JOB_FINISHED",
  "METHOD_NOT_ALLOWED",
  "MEDIA_TYPE",
  "PAYLOAD_TOO_LARGE",
  "UNSUPPORTED_CONTENT",
  "UNREACHABLE",
  "RENDERER_UNAVAILABLE",
  "QUEUE_FULL",
  "JOBS_FULL",
  "JOBS_KEPT_FULL",
  "JOBS_UNAVAILABLE",
  "FEATURE_DISABLED",
  "UPSTREAM_ERROR",
  "TIMEOUT",
  "INTERNAL",
] as const;
export type ScraperErrorCode = (typeof SCRAPER_ERROR_CODES)[number];

/** Every error of the scraper API, whatever the route: the HTTP status goes with the code. */
export const scraperErrorSchema = z.object({
  success: z.literal(false),
  error: z.string().describe("What went wrong, for a human"),
  code: z.enum(SCRAPER_ERROR_CODES).describe("The error's code (stable)"),
});

/** Longest wait after load a request may ask for (ms); the rendering service has the same bound. */
export const MAX_WAIT_MS = 60_000;

// Firecrawl v1's `formats`: which representations of a page an answer carries
// (services/scraper/src/api/formats.ts makes them).
export const FORMATS = ["markdown", "html", "rawHtml", "links", "screenshot", "screenshot@fullPage"] as const;
export type Format = (typeof FORMATS)[number];

export const formatsSchema = z
  .array(z.enum(FORMATS))
  .min(1, "at least one format")
  .max(FORMATS.length)
  .describe(
    "Firecrawl v1 formats: the fields the answer carries. Absent: the reference's answer (markdown, html = the rendered page, screenshot = base64 or null)",
  );

// Extractors: {name: selector} → values from the rendered page. A selector is a CSS selector
// (text of the first match, or null), "selector@attr" (an attribute of the first match), or an
// object {selector, attribute?, all?} (all: every match, as a list).
export const MAX_EXTRACTORS = 50;

export const extractorSpecSchema = z.union([
  z.string().min(1).max(1000),
  z.strictObject({
    selector: z.string().min(1).max(1000),
    attribute: z.string().min(1).max(100).optional(),
    all: z.boolean().default(false),
  }),
]);
export const extractorsSchema = z
  .record(z.string().min(1).max(100), extractorSpecSchema)
  .refine((m) => Object.keys(m).length <= MAX_EXTRACTORS, `at most ${MAX_EXTRACTORS} extractors`);

/** The page options as an object (the crawl's and batch's scrapeOptions pick from it). */
export const pageOptionsObject = z.object({
  waitFor: z.int().min(0).max(MAX_WAIT_MS).default(0),
  screenshot: z.boolean().default(false),
  fullPageScreenshot: z.boolean().default(false),
  // On by default, as in Firecrawl v1: page chrome is not knowledge.
  onlyMainContent: z.boolean().default(true),
  includeHtml: z.boolean().default(true),
  headers: z.record(z.string().min(1).max(256), z.string().max(8192)).optional(),
  timeout: z.int().min(100).max(600_000).optional(),
  blockMedia: z.boolean().optional(),
});

export const pageOptionsSchema = pageOptionsObject.prefault({});

export const extractorOptionsSchema = z.object({
  mode: z.literal("llm-extraction"),
  extractionPrompt: z.string().min(1).max(8000).optional(),
  extractionSchema: z.record(z.string(), z.unknown()).optional(),
});

export const url = z.string({ error: "must be a string" }).min(1).max(8192);

export const scrapeBodySchema = z.object({
  url,
  pageOptions: pageOptionsSchema,
  extractors: extractorsSchema.optional(),
  extractorOptions: extractorOptionsSchema.optional(),
  formats: formatsSchema.optional(),
});

export const bulkBodySchema = z.object({
  urls: z.array(url).min(1, "at least one URL"),
  pageOptions: pageOptionsSchema,
  extractors: extractorsSchema.optional(),
  formats: formatsSchema.optional(),
});

const optionalText = z.string().optional();

/** The metadata of a scraped page: title, description, language, Open Graph and Twitter card fields (Firecrawl's names). */
export const pageMetadataSchema = z.object({
  title: z.string(),
  description: z.string(),
  language: z.string().nullable(),
  keywords: optionalText,
  robots: optionalText,
  canonical: optionalText,
  favicon: optionalText,
  ogTitle: optionalText,
  ogDescription: optionalText,
  ogUrl: optionalText,
  ogImage: optionalText,
  ogType: optionalText,
  ogSiteName: optionalText,
  ogLocale: optionalText,
  twitterCard: optionalText,
  twitterTitle: optionalText,
  twitterDescription: optionalText,
  twitterImage: optionalText,
  sourceURL: z.string().describe("The URL asked for"),
  url: z.string().describe("The URL rendered, after redirects"),
  statusCode: z.int().describe("The target's HTTP status"),
  contentType: z.string().nullable(),
  error: optionalText.describe("The target's error text when statusCode >= 400"),
});

// Without `formats`, markdown, html and screenshot are always there (the reference's answer);
// with it, exactly the formats asked for.
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

/** The answer of POST /scrape. */
export const scrapeResponseSchema = z.object({ success: z.literal(true), data: scrapeDataSchema });

/** One URL of a bulk scrape: its page, or its own error (the others still succeed). */
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

/** The answer of POST /scrape/bulk. */
export const bulkResponseSchema = z.object({
  success: z.literal(true),
  total: z.int(),
  succeeded: z.int(),
  failed: z.int(),
  data: z.array(bulkEntrySchema).describe("One entry per URL, in the order given"),
});

// The Firecrawl v1 style crawl (POST /crawl, GET and DELETE /crawl/{id}); field names and
// defaults are Firecrawl v1's where the reference is silent, and where Capstan differs the
// description says so (docs/scraper.md has the same list).

/** Firecrawl's scrapeOptions: what each page of a crawl or batch is scraped with. */
export const scrapeOptionsObject = pageOptionsObject
  .pick({ waitFor: true, onlyMainContent: true, headers: true, timeout: true, blockMedia: true })
  .extend({ formats: formatsSchema.default(["markdown"]) });
export const scrapeOptionsSchema = scrapeOptionsObject.prefault({});

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

/** A crawl or batch scrape was started. */
export const jobStartedSchema = z.object({
  success: z.literal(true),
  id: z.uuid(),
  url: z.string().describe("Where to ask for the job's status and results"),
  invalidURLs: z.array(z.string()).optional().describe("Batch: URLs left out (ignoreInvalidURLs)"),
});

/** Progress and one page of results of a job (GET /crawl/{id}?skip=). */
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

/** The job is cancelled and fetches nothing more (DELETE /crawl/{id}). */
export const jobCancelledSchema = z.object({ success: z.literal(true), status: z.literal("cancelled") });
