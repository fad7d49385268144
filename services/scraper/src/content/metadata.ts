// Page metadata from the document head: title, description, language, keywords, robots,
// canonical URL, favicon, Open Graph and Twitter card fields (Firecrawl's names).
import type { CheerioAPI } from "cheerio";
import { z } from "zod";

const optionalText = z.string().optional();

/** The metadata of a scraped page; the API's answers are serialised (and documented) through it. */
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
