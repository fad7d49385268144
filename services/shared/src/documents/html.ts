// HTML to Markdown for uploaded documents (search's documents API): turndown with the GFM
// plugin (tables, strikethrough, task lists, fenced code with its `language-*` class). An
// uploaded file is the document itself, so nothing is extracted as "main content": scripts,
// styles and other non-content elements are dropped, the rest converted. The scraper has its own,
// richer pipeline for rendered web pages (services/scraper/src/content).
import { gfm } from "@joplin/turndown-plugin-gfm";
import TurndownService from "turndown";

let service: TurndownService | undefined;

function turndown(): TurndownService {
  if (service) return service;
  service = new TurndownService({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    bulletListMarker: "-",
    emDelimiter: "*",
    hr: "---",
  });
  service.use(gfm);
  service.remove(["script", "style", "noscript", "template", "iframe", "object", "embed", "head", "title"]);
  return service;
}

/** The text of the document's <title>, if any. */
export function htmlTitle(html: string): string | undefined {
  const m = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html);
  const title = m?.[1]
    ?.replace(/<[^>]*>/g, "")
    .replace(/\s+/g, " ")
    .trim();
  return title ? decodeEntities(title) : undefined;
}

function decodeEntities(s: string): string {
  return s
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&amp;/g, "&");
}

export function htmlToMarkdown(html: string): string {
  return turndown()
    .turndown(html)
    .replace(/[ \t]+\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
