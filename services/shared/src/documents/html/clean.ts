// The HTML that becomes Markdown: scripts, styles, hidden nodes and widgets dropped; heading
// permalinks (¶, #, §, 🔗) and code line numbers removed; with onlyMainContent, page chrome
// (navigation, header, footer, sidebars, cookie banners) removed and <main>/<article> preferred;
// links (fragments included) and images made absolute against the page's URL (an uploaded file has
// none: its links stay as written), script links unwrapped, empty links dropped.
import { type Cheerio, type CheerioAPI, load } from "cheerio";
import type { AnyNode } from "domhandler";

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
  "button",
  "[hidden]",
  '[aria-hidden="true"]',
  '[style*="display:none"]',
  '[style*="display: none"]',
].join(",");

const CHROME = [
  "nav",
  "header",
  "footer",
  '[role="navigation"]',
  '[role="banner"]',
  '[role="contentinfo"]',
  '[role="complementary"]',
  '[role="dialog"]',
  ".nav",
  ".navbar",
  ".menu",
  ".breadcrumb",
  // DocBook XSL's page navigation (PostgreSQL's manual, the Debian Reference).
  ".navheader",
  ".navfooter",
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

/**
 * Asides and sidebars: chrome, except where they are content. Footnotes and notes are content:
 * docutils writes each footnote as <aside class="footnote"> inside an <aside class="footnote-list">,
 * so an aside holding footnotes is kept too. See also proseInSection.
 */
const ASIDES = [
  'aside:not(.footnote, .footnote-list, [role="doc-footnote"], [role="doc-endnotes"], [role="note"]):not(:has(.footnote, [role="doc-footnote"]))',
  ".sidebar",
  "#sidebar",
].join(",");

/**
 * An aside inside a section or article of the text that is mostly prose (less than half its
 * text in links) is part of that text, as the HTML standard defines <aside> ("tangentially
 * related to the content around it"): docutils' `sidebar` directive ("Important: this page is
 * reference only; for tutorials see …"), a note box. Page sidebars are navigation: mostly links,
 * or outside the sections.
 */
function proseInSection($: CheerioAPI, el: AnyNode): boolean {
  const aside = $(el);
  if (aside.parents("article, section").length === 0) return false;
  const length = (s: string) => s.replace(/\s+/g, "").length;
  const text = length(aside.text());
  return text > 0 && length(aside.find("a").text()) < text / 2;
}

/** Permalink anchors that documentation generators put in headings and definitions. */
const PERMALINKS = [
  ".headerlink",
  ".anchor-link",
  ".hash-link",
  ".anchorjs-link",
  ".permalink",
  "a.anchor",
  "a.doc-anchor",
].join(",");
const PERMALINK_TEXT = /^[\s¶#§🔗⚓]*$/u;
/** Line-number gutters of highlighted code (Sphinx linenos, Pygments tables, rustdoc). */
const LINE_NUMBERS = [".linenos", ".lineno", ".line-numbers", ".linenodiv", "td.gutter", ".example-line-numbers"].join(
  ",",
);

function removePermalinks($: CheerioAPI): void {
  $(PERMALINKS).remove();
  $("h1 a, h2 a, h3 a, h4 a, h5 a, h6 a").each((_, el) => {
    const a = $(el);
    if ((a.attr("href") ?? "").startsWith("#") && PERMALINK_TEXT.test(a.text()) && a.find("img").length === 0)
      a.remove();
  });
}

const MAIN = ["main", '[role="main"]', "article", "#content", "#main", ".content", ".main"];

function absolutise($: CheerioAPI, baseUrl: string | undefined): void {
  const resolve = (value: string | undefined): string | undefined => {
    if (!value) return undefined;
    if (baseUrl === undefined) return value;
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
export function cleanHtml(html: string | CheerioAPI, baseUrl: string | undefined, onlyMainContent: boolean): string {
  const $ = typeof html === "string" ? load(html) : html;
  $(ALWAYS_REMOVE).remove();
  $(LINE_NUMBERS).remove();
  removePermalinks($);
  let root: Cheerio<AnyNode> = $("body");
  if (onlyMainContent) {
    $(CHROME).remove();
    $(ASIDES)
      .filter((_, el) => !proseInSection($, el))
      .remove();
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
