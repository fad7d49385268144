// HTML → Markdown of the quality expected from Firecrawl: scripts, styles and hidden nodes
// dropped; with onlyMainContent, page chrome (navigation, header, footer, sidebars, cookie
// banners) removed and <main>/<article> preferred; links and images made absolute, script
// links unwrapped, empty links dropped; turndown with GFM tables, strikethrough and task lists.
import { gfm } from "@joplin/turndown-plugin-gfm";
import { type Cheerio, type CheerioAPI, load } from "cheerio";
import type { AnyNode } from "domhandler";
import TurndownService from "turndown";

const ALWAYS_REMOVE = [
  "script",
  "style",
  "noscript",
  "template",
  "iframe",
  "object",
  "embed",
  "canvas",
  "link",
  "meta",
  "[hidden]",
  '[aria-hidden="true"]',
  '[style*="display:none"]',
  '[style*="display: none"]',
].join(",");

const CHROME = [
  "nav",
  "header",
  "footer",
  "aside",
  '[role="navigation"]',
  '[role="banner"]',
  '[role="contentinfo"]',
  '[role="complementary"]',
  '[role="dialog"]',
  ".sidebar",
  "#sidebar",
  ".nav",
  ".navbar",
  ".menu",
  ".breadcrumb",
  ".breadcrumbs",
  ".cookie",
  ".cookie-banner",
  "#cookie-banner",
  ".advert",
  ".ad",
  ".ads",
  ".social",
  ".share",
  ".comments",
  "#comments",
  ".skip-link",
].join(",");

const MAIN = ["main", '[role="main"]', "article", "#content", "#main", ".content", ".main"];

function absolutise($: CheerioAPI, baseUrl: string): void {
  const resolve = (value: string | undefined): string | undefined => {
    if (!value) return undefined;
    try {
      return new URL(value, baseUrl).href;
    } catch {
      return undefined;
    }
  };
  $("a[href]").each((_, el) => {
    const a = $(el);
    const href = (a.attr("href") ?? "").trim();
    if (/^(javascript|vbscript|data):/i.test(href)) {
      a.removeAttr("href");
      return;
    }
    if (href.startsWith("#")) return;
    const abs = resolve(href);
    if (abs) a.attr("href", abs);
    else a.removeAttr("href");
  });
  $("img").each((_, el) => {
    const img = $(el);
    const src = img.attr("src") ?? img.attr("data-src") ?? "";
    const abs = /^data:/i.test(src) ? undefined : resolve(src);
    if (abs) img.attr("src", abs);
    else img.remove();
  });
  // Links with nothing to click on become noise in markdown.
  $("a").each((_, el) => {
    const a = $(el);
    if (!a.text().trim() && a.find("img").length === 0) a.remove();
    else if (!a.attr("href")) a.replaceWith(a.contents());
  });
}

/**
 * The HTML that becomes markdown (also useful to callers that want cleaned HTML). Given an
 * already parsed document, it works on that document (and changes it) instead of parsing again.
 */
export function cleanHtml(html: string | CheerioAPI, baseUrl: string, onlyMainContent: boolean): string {
  const $ = typeof html === "string" ? load(html) : html;
  $(ALWAYS_REMOVE).remove();
  let root: Cheerio<AnyNode> = $("body");
  if (onlyMainContent) {
    $(CHROME).remove();
    for (const selector of MAIN) {
      const candidates = $(selector);
      if (candidates.length === 0) continue;
      // The candidate with the most text wins (a page may have several <article> teasers).
      let best = candidates.first();
      candidates.each((_, el) => {
        if ($(el).text().length > best.text().length) best = $(el);
      });
      if (best.text().trim()) {
        root = best;
        break;
      }
    }
  }
  absolutise($, baseUrl);
  return (root.length ? root.html() : $.root().html()) ?? "";
}

function createTurndown(): TurndownService {
  const service = new TurndownService({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    bulletListMarker: "-",
    emDelimiter: "*",
    hr: "---",
  });
  service.use(gfm);
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
 * each page once for metadata, extractors and markdown); that document is changed.
 */
export function htmlToMarkdown(
  html: string | CheerioAPI,
  baseUrl: string,
  opts: { onlyMainContent?: boolean } = {},
): string {
  turndown ??= createTurndown();
  const cleaned = cleanHtml(html, baseUrl, opts.onlyMainContent ?? false);
  return turndown
    .turndown(cleaned)
    .replace(/[ \t]+\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
