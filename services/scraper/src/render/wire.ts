// The wire format between the scraper API and the rendering service (POST {RENDER_URL}/scrape).
// It follows Firecrawl's playwright-service (url, wait_after_load, timeout, headers →
// content, pageStatusCode, pageError) and adds what this scraper needs: screenshots, the
// final URL after redirects, the content type and the count of requests the guard refused.
// Errors travel as {success: false, error, code} with the HTTP status of the error registry.
import { z } from "zod";

export const MAX_WAIT_MS = 60_000;

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

export interface RenderResponse {
  content: string;
  pageStatusCode: number;
  pageError: string | null;
  finalUrl: string;
  contentType: string | null;
  /** Base64 PNG, or null when no screenshot was asked for. */
  screenshot: string | null;
  blockedRequests: number;
}

/** The body of GET /scrape: the probe the reference gives the rendering service. */
export interface RenderProbe {
  status: "ok" | "unavailable";
  service: "capstan-scraper-render";
  browser: "connected" | "disconnected";
  pagesInUse: number;
  maxPages: number;
  queued: number;
}
