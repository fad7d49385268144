// Page metadata from the document head: title, description, language, keywords, robots,
// canonical URL, favicon, Open Graph and Twitter card fields (Firecrawl's names).

import { pageMetadataSchema } from "@capstan/shared/clients/scraper-wire";
import type { CheerioAPI } from "cheerio";
import type { z } from "zod";

// The metadata's schema is the scraper's wire with its client, defined once.
export { pageMetadataSchema };
export type PageMetadata = z.output<typeof pageMetadataSchema>;

const OPEN_GRAPH: Record<string, keyof PageMetadata> = {
  "og:title": "ogTitle",
  "og:description": "ogDescription",
  "og:url": "ogUrl",
  "og:image": "ogImage",
  "og:type": "ogType",
  "og:site_name": "ogSiteName",
  "og:locale": "ogLocale",
  "twitter:card": "twitterCard",
  "twitter:title": "twitterTitle",
  "twitter:description": "twitterDescription",
  "twitter:image": "twitterImage",
};

function absolute(href: string | undefined, base: string): string | undefined {
  if (!href) return undefined;
  try {
    return new URL(href, base).href;
  } catch {
    return undefined;
  }
}

const clean = (s: string | undefined) => (s ?? "").replace(/\s+/g, " ").trim();

export function extractMetadata(
  $: CheerioAPI,
  page: { sourceURL: string; url: string; statusCode: number; contentType: string | null; error?: string | null },
): PageMetadata {
  const meta = (selector: string) => clean($(selector).first().attr("content"));
  const out: PageMetadata = {
    title: clean($("head > title").first().text() || $("title").first().text()),
    description: meta('meta[name="description" i]') || meta('meta[property="og:description"]'),
    language: clean($("html").attr("lang")) || meta('meta[http-equiv="content-language" i]') || null,
    sourceURL: page.sourceURL,
    url: page.url,
    statusCode: page.statusCode,
    contentType: page.contentType,
  };
  const keywords = meta('meta[name="keywords" i]');
  if (keywords) out.keywords = keywords;
  const robots = meta('meta[name="robots" i]');
  if (robots) out.robots = robots;
  const canonical = absolute($('link[rel="canonical" i]').attr("href"), page.url);
  if (canonical) out.canonical = canonical;
  const favicon = absolute($('link[rel~="icon" i]').first().attr("href"), page.url);
  if (favicon) out.favicon = favicon;
  $("meta[property], meta[name]").each((_, el) => {
    const key = ($(el).attr("property") ?? $(el).attr("name") ?? "").toLowerCase();
    const field = OPEN_GRAPH[key];
    const value = clean($(el).attr("content"));
    if (field && value && !(field in out)) {
      (out as unknown as Record<string, string>)[field] =
        field === "ogImage" || field === "ogUrl" || field === "twitterImage"
          ? (absolute(value, page.url) ?? value)
          : value;
    }
  });
  if (page.error && page.statusCode >= 400) out.error = page.error;
  return out;
}
