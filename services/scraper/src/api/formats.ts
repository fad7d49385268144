// Firecrawl v1's `formats`: which representations of a page an answer carries. Without `formats`
// the answer is the reference's (2.10: markdown, the rendered HTML as `html`, `screenshot` as
// plain base64 or null, metadata). With it, the answer has exactly the fields asked for, as
// Firecrawl names them: `markdown`; `html`, the cleaned HTML the Markdown is made from (scripts,
// styles, hidden nodes and, with onlyMainContent, page chrome removed; links absolute);
// `rawHtml`, the rendered document as it is; `links`, every http(s) link of the page; `screenshot`
// (`screenshot@fullPage` for the whole page), a PNG as a data: URL.

import type { Format } from "@capstan/shared/clients/scraper-wire";
import { cleanHtml } from "@capstan/shared/documents/html";
import type { CheerioAPI } from "cheerio";

// The formats' names and schema are the scraper's wire with its client, defined once.
export { FORMATS, type Format, formatsSchema } from "@capstan/shared/clients/scraper-wire";

/** Most links one page contributes (a page of a million anchors must not fill the job store). */
const MAX_LINKS = 5_000;

/**
 * Every distinct http(s) link of a page, absolute against its final URL and without its
 * fragment, in document order. Read before the Markdown conversion cleans the document.
 */
export function pageLinks($: CheerioAPI, baseUrl: string): string[] {
  const out = new Set<string>();
  $("a[href], area[href]").each((_, el) => {
    if (out.size >= MAX_LINKS) return false;
    const href = $(el).attr("href")?.trim();
    if (!href) return;
    try {
      const url = new URL(href, baseUrl);
      if (url.protocol !== "http:" && url.protocol !== "https:") return;
      url.hash = "";
      out.add(url.href);
    } catch {
      // Not a URL: skipped.
    }
    return;
  });
  return [...out];
}

export function wantsScreenshot(formats: readonly Format[] | undefined): { screenshot: boolean; fullPage: boolean } {
  const fullPage = formats?.includes("screenshot@fullPage") ?? false;
  return { screenshot: fullPage || (formats?.includes("screenshot") ?? false), fullPage };
}

/** What a render produced, before the answer is shaped. */
export interface PageParts {
  markdown: string;
  rawHtml: string;
  finalUrl: string;
  screenshot: string | null;
  links: string[] | undefined;
  onlyMainContent: boolean;
}

/** The fields `formats` asks for (metadata and extraction results are added by the caller). */
export function formatFields(formats: readonly Format[], parts: PageParts) {
  const fields: {
    markdown?: string;
    html?: string;
    rawHtml?: string;
    links?: string[];
    screenshot?: string | null;
  } = {};
  if (formats.includes("markdown")) fields.markdown = parts.markdown;
  // A second parse, only when cleaned HTML is asked for: the first one was cleaned in place for Markdown.
  if (formats.includes("html")) fields.html = cleanHtml(parts.rawHtml, parts.finalUrl, parts.onlyMainContent);
  if (formats.includes("rawHtml")) fields.rawHtml = parts.rawHtml;
  if (formats.includes("links")) fields.links = parts.links ?? [];
  if (wantsScreenshot(formats).screenshot) {
    fields.screenshot = parts.screenshot === null ? null : `data:image/png;base64,${parts.screenshot}`;
  }
  return fields;
}
