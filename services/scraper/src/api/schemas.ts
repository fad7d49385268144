// Request bodies of the scraper API (reference 2.9, plus documented extras). Unknown fields
// are ignored so Firecrawl clients that send more options keep working.
import { z } from "zod";
import { extractorsSchema } from "../content/extractors.ts";
import { MAX_WAIT_MS } from "../render/wire.ts";
import { formatsSchema } from "./formats.ts";

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

export const searchBodySchema = z.object({
  query: z.string().min(1).max(1000),
  limit: z.int().min(1).max(20).default(5),
  scrape: z.boolean().default(false),
  pageOptions: pageOptionsSchema,
});

export type PageOptions = z.output<typeof pageOptionsSchema>;
export type ScrapeBody = z.output<typeof scrapeBodySchema>;
export type BulkBody = z.output<typeof bulkBodySchema>;
