// Firecrawl's own request bodies, v1 (@mendable/firecrawl-js 1.x, firecrawl-py's v1 client) and v2
// (firecrawl-js 4.x, firecrawl-py 4.x), and their pure translation into what the scraper's routes
// already run (ScrapeInput, CrawlBody, MapBody, BatchBody). What Capstan does not do is refused
// by the schema with a 400 that names the field, in Firecrawl's error shape ({success: false,
// error}, plus Capstan's code); what changes nothing a caller could check (origin, integration,
// cache hints) is accepted and ignored. docs/scraper.md lists both.
import { z } from "zod";
import { FORMATS, type Format } from "../api/formats.ts";
import { pageOptionsObject, url } from "../api/schemas.ts";
import type { ScrapeInput } from "../api/scrape-service.ts";
import { type BatchBody, batchBodySchema, type CrawlBody, crawlBodySchema, type MapBody } from "../crawl/schemas.ts";

const NOT_HERE = "is not supported by Capstan's scraper (docs/scraper.md, Firecrawl compatibility)";

/** A Firecrawl option Capstan refuses: absent, empty or false passes; anything else is a 400. */
function refused(what: string) {
  return z
    .unknown()
    .refine((v) => v === undefined || v === null || v === false || (Array.isArray(v) && v.length === 0), {
      message: `${what} ${NOT_HERE}`,
    })
    .optional()
    .describe(`Refused: ${what} ${NOT_HERE}`);
}

const formatList = `supported: ${FORMATS.join(", ")}; json, changeTracking, summary, images, branding and attributes ${NOT_HERE}`;

/** v1: formats are names. */
const v1Format = z.enum(FORMATS, { error: `unsupported format (${formatList})` });

/** v2: a name, or an object with `type` (screenshot's fullPage is honoured). */
const v2Format = z.union(
  [
    v1Format,
    z.looseObject({
      type: z.enum(["markdown", "html", "rawHtml", "links", "screenshot"], {
        error: `unsupported format (${formatList})`,
      }),
      fullPage: z.boolean().optional(),
    }),
  ],
  { error: `unsupported format (${formatList})` },
);

/** Options both versions share for one page (Firecrawl's names and defaults). */
const pageOptions = {
  onlyMainContent: z.boolean().default(true),
  waitFor: pageOptionsObject.shape.waitFor,
  timeout: pageOptionsObject.shape.timeout,
  headers: pageOptionsObject.shape.headers,
  includeTags: refused("includeTags"),
  excludeTags: refused("excludeTags"),
  actions: refused("actions"),
  jsonOptions: refused("jsonOptions"),
  changeTrackingOptions: refused("changeTrackingOptions"),
  extract: refused("extract"),
};

export const v1ScrapeOptions = z.object({ ...pageOptions, formats: z.array(v1Format).min(1).default(["markdown"]) });
export const v2ScrapeOptions = z.object({ ...pageOptions, formats: z.array(v2Format).min(1).default(["markdown"]) });
export type V1ScrapeOptions = z.output<typeof v1ScrapeOptions>;
export type V2ScrapeOptions = z.output<typeof v2ScrapeOptions>;

export const v1ScrapeBody = v1ScrapeOptions.extend({ url });
export const v2ScrapeBody = v2ScrapeOptions.extend({ url });

/** v2 format entries as the names the scraper renders. */
export function formatNames(formats: V2ScrapeOptions["formats"]): Format[] {
  const out = new Set<Format>();
  for (const f of formats) {
    if (typeof f === "string") out.add(f);
    else if (f.type === "screenshot" && f.fullPage) out.add("screenshot@fullPage");
    else out.add(f.type);
  }
  return [...out];
}

/** One page of either version as the scraper's ScrapeInput. */
export function scrapeInputOf(body: { url: string } & V1ScrapeOptions, formats: Format[]): ScrapeInput {
  return {
    url: body.url,
    formats,
    pageOptions: {
      waitFor: body.waitFor,
      onlyMainContent: body.onlyMainContent,
      screenshot: false,
      fullPageScreenshot: false,
      includeHtml: true,
      headers: body.headers,
      timeout: body.timeout,
    },
  };
}

/** The scrape options of a crawl or batch entry, as the scraper's job bodies carry them. */
function jobScrapeOptions(o: V2ScrapeOptions) {
  return {
    formats: formatNames(o.formats),
    waitFor: o.waitFor,
    onlyMainContent: o.onlyMainContent,
    ...(o.headers ? { headers: o.headers } : {}),
    ...(o.timeout !== undefined ? { timeout: o.timeout } : {}),
  };
}

const c = crawlBodySchema.shape;

/** v1 crawl: the scraper's own /crawl body (it is Firecrawl v1's), with v1's refusals. */
export const v1CrawlBody = crawlBodySchema.extend({
  scrapeOptions: v1ScrapeOptions.prefault({}),
  webhook: refused("webhook"),
  delay: refused("delay (robots.txt Crawl-delay is honoured)"),
});

/** v2 crawl: sitemap and crawlEntireDomain in place of ignoreSitemap and allowBackwardLinks; no maxDepth. */
export const v2CrawlBody = z.object({
  url,
  includePaths: c.includePaths,
  excludePaths: c.excludePaths,
  maxDiscoveryDepth: c.maxDiscoveryDepth,
  sitemap: z.enum(["skip", "include"]).default("include").describe("Read the site's sitemaps (include) or not (skip)"),
  ignoreQueryParameters: c.ignoreQueryParameters,
  limit: c.limit,
  crawlEntireDomain: z.boolean().default(false).describe("Follow links outside the start URL's path"),
  allowExternalLinks: c.allowExternalLinks,
  allowSubdomains: c.allowSubdomains,
  maxConcurrency: c.maxConcurrency,
  scrapeOptions: v2ScrapeOptions.prefault({}),
  prompt: refused("prompt"),
  webhook: refused("webhook"),
  delay: refused("delay (robots.txt Crawl-delay is honoured)"),
  regexOnFullURL: refused("regexOnFullURL"),
});

/** The path-depth bound v2 does not have: as deep as the scraper allows. */
const ANY_DEPTH = 1000;

export function crawlOfV1(b: z.output<typeof v1CrawlBody>): CrawlBody {
  const { webhook: _w, delay: _d, scrapeOptions, ...rest } = b;
  return { ...rest, scrapeOptions: jobScrapeOptions(scrapeOptions) };
}

export function crawlOfV2(b: z.output<typeof v2CrawlBody>): CrawlBody {
  return {
    url: b.url,
    includePaths: b.includePaths,
    excludePaths: b.excludePaths,
    maxDepth: ANY_DEPTH,
    ...(b.maxDiscoveryDepth !== undefined ? { maxDiscoveryDepth: b.maxDiscoveryDepth } : {}),
    ignoreSitemap: b.sitemap === "skip",
    ignoreQueryParameters: b.ignoreQueryParameters,
    ...(b.limit !== undefined ? { limit: b.limit } : {}),
    allowBackwardLinks: b.crawlEntireDomain,
    allowExternalLinks: b.allowExternalLinks,
    allowSubdomains: b.allowSubdomains,
    ...(b.maxConcurrency !== undefined ? { maxConcurrency: b.maxConcurrency } : {}),
    scrapeOptions: jobScrapeOptions(b.scrapeOptions),
  };
}

/** Batch scrape, both versions: urls and the scrape options at the top level. */
const batchExtra = {
  urls: batchBodySchema.shape.urls,
  ignoreInvalidURLs: batchBodySchema.shape.ignoreInvalidURLs,
  maxConcurrency: batchBodySchema.shape.maxConcurrency,
  webhook: refused("webhook"),
};
export const v1BatchBody = v1ScrapeOptions.extend(batchExtra);
export const v2BatchBody = v2ScrapeOptions.extend(batchExtra);

export function batchOf(b: z.output<typeof v2BatchBody>): BatchBody {
  const { urls, ignoreInvalidURLs, maxConcurrency } = b;
  return {
    ...jobScrapeOptions(b),
    urls,
    ignoreInvalidURLs,
    ...(maxConcurrency !== undefined ? { maxConcurrency } : {}),
  };
}

/** v2 map: one `sitemap` switch in place of v1's ignoreSitemap and sitemapOnly. */
export const v2MapBody = z.object({
  url,
  search: z.string().min(1).max(500).optional().describe("Only URLs containing this text (case-insensitive)"),
  sitemap: z
    .enum(["only", "include", "skip"])
    .default("include")
    .describe("Sitemap URLs only, with the start page's links (include), or the start page's links only (skip)"),
  includeSubdomains: z.boolean().default(true),
  limit: z.int().min(1).max(30_000).default(5_000),
  timeout: z.int().min(100).max(600_000).optional(),
});

export function mapOfV2(b: z.output<typeof v2MapBody>): MapBody {
  return {
    url: b.url,
    ...(b.search ? { search: b.search } : {}),
    ignoreSitemap: b.sitemap === "skip",
    sitemapOnly: b.sitemap === "only",
    includeSubdomains: b.includeSubdomains,
    limit: b.limit,
  };
}
