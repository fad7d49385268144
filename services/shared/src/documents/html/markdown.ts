// HTML → Markdown of the quality expected from Firecrawl, on turndown, the one converter of the
// platform (the scraper's pages, search's uploaded HTML documents): the cleaned HTML
// (clean.ts), code blocks fenced and verbatim with their language (code-blocks.ts), tables as
// GFM or clean HTML (tables.ts), <br> as a hard line break, strikethrough and task lists;
// headings on one line, code holding links and link destinations as inline.ts says.
// A text or JSON response is its own Markdown, unescaped.
import { strikethrough, taskListItems } from "@joplin/turndown-plugin-gfm";
import { type CheerioAPI, load } from "cheerio";
import TurndownService from "turndown";
import { cleanHtml } from "./clean.ts";
import { codeBlocks } from "./code-blocks.ts";
import { inlineRules } from "./inline.ts";
import { tables } from "./tables.ts";

export { cleanHtml } from "./clean.ts";

function createTurndown(): TurndownService {
  const service = new TurndownService({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    bulletListMarker: "-",
    emDelimiter: "*",
    hr: "---",
    // A hard line break that survives trimming trailing spaces (CommonMark's backslash form).
    br: "\\",
  });
  service.use([strikethrough, taskListItems, codeBlocks, tables, inlineRules]);
  // "- item" and "1. item" (turndown's default pads markers to four columns).
  service.addRule("listItem", {
    filter: "li",
    replacement(content, node, options) {
      const parent = node.parentNode as HTMLElement | null;
      let prefix = `${options.bulletListMarker} `;
      if (parent?.nodeName === "OL") {
        const start = Number(parent.getAttribute("start") ?? "1") || 1;
        prefix = `${start + Array.prototype.indexOf.call(parent.children, node)}. `;
      }
      const body = content
        .replace(/^\n+/, "")
        .replace(/\n+$/, "\n")
        .replace(/\n/gm, `\n${" ".repeat(prefix.length)}`);
      return prefix + body + (node.nextSibling && !/\n$/.test(body) ? "\n" : "");
    },
  });
  return service;
}

let turndown: TurndownService | undefined;

/**
 * Markdown of a page. `html` may be the document already parsed with cheerio (the API parses
 * each page once for metadata, extractors and markdown); that document is changed. `baseUrl` is
 * the page's URL, which relative links and images are resolved against; without one (an uploaded
 * file) they stay as written.
 */
export function htmlToMarkdown(
  html: string | CheerioAPI,
  baseUrl?: string,
  opts: { onlyMainContent?: boolean } = {},
): string {
  turndown ??= createTurndown();
  const cleaned = cleanHtml(html, baseUrl, opts.onlyMainContent ?? false);
  return tidy(turndown.turndown(cleaned));
}

/** Trailing spaces and runs of blank lines removed, except inside fenced code, which stays verbatim. */
function tidy(markdown: string): string {
  const parts = markdown.split(/(^(`{3,})[^\n]*\n[\s\S]*?\n\2$)/m);
  let out = "";
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] ?? "";
    if (i % 3 === 1) out += part;
    else if (i % 3 === 0) out += part.replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n");
  }
  return out.trim();
}

const TEXT_TYPES = /^(text\/plain|application\/(json|[\w.+-]+\+json)|text\/markdown)\b/i;

/**
 * Markdown of a rendered response: a text, Markdown or JSON response is passed through as it is
 * (Chromium shows it in a <pre>; escaping it would corrupt it), anything else converted.
 */
export function documentToMarkdown(
  $: CheerioAPI,
  contentType: string | null,
  baseUrl: string,
  opts: { onlyMainContent?: boolean } = {},
): string {
  if (contentType && TEXT_TYPES.test(contentType)) {
    const pre = $("body > pre").first();
    return (pre.length ? pre.text() : $("body").text()).trim();
  }
  return htmlToMarkdown($, baseUrl, opts);
}

/** The text of a document's <title> (entities decoded, white space collapsed), if any. */
export function htmlTitle(html: string): string | undefined {
  const title = load(html)("head > title, title").first().text().replace(/\s+/g, " ").trim();
  return title || undefined;
}
