// The wire format between the scraper API and the rendering service (POST {RENDER_URL}/scrape).
// It follows Firecrawl's playwright-service (url, wait_after_load, timeout, headers →
// content, pageStatusCode, pageError) and adds what this scraper needs: screenshots, the
// final URL after redirects, the content type and the count of requests the guard refused.
// Errors travel as {success: false, error, code} with the HTTP status of the error registry.
// Schema first, defined once: the rendering service's routes (app.ts) validate the request and
// serialise their answers with these schemas, and its client (api/render-client.ts) parses every
// answer with them.
import { MAX_WAIT_MS } from "@capstan/shared/clients/scraper-wire";
import { z } from "zod";

export { MAX_WAIT_MS };

export const renderRequestSchema = z.strictObject({
  url: z.string().min(1).max(8192),
  wait_after_load: z.int().min(0).max(MAX_WAIT_MS).default(0),
  timeout: z.int().min(100).max(600_000).optional(),
  headers: z.record(z.string().max(256), z.string().max(8192)).optional(),
  screenshot: z.boolean().default(false),
  full_page_screenshot: z.boolean().default(false),
  block_media: z.boolean().optional(),
});

export type RenderRequest = z.input<typeof renderRequestSchema>;
export type ParsedRenderRequest = z.output<typeof renderRequestSchema>;

/** POST /scrape's answer: the rendered page. */
export const renderResponseSchema = z.object({
  content: z.string(),
  pageStatusCode: z.int(),
  pageError: z.string().nullable(),
  finalUrl: z.string(),
  contentType: z.string().nullable(),
  /** Base64 PNG, or null when no screenshot was asked for. */
  screenshot: z.string().nullable(),
  blockedRequests: z.int().min(0),
});
export type RenderResponse = z.infer<typeof renderResponseSchema>;

/** The body of GET /scrape (200 when the browser is connected, else 503): the probe the reference gives the rendering service. */
export const renderProbeSchema = z.object({
  status: z.enum(["ok", "unavailable"]),
  service: z.literal("capstan-scraper-render"),
  browser: z.enum(["connected", "disconnected"]),
  pagesInUse: z.int().min(0),
  maxPages: z.int().min(0),
  queued: z.int().min(0),
});
export type RenderProbe = z.infer<typeof renderProbeSchema>;
