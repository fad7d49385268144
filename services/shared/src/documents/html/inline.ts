// Inline structures turndown gets wrong on documentation pages:
// - a heading is one line: a <br> inside it (rustdoc's `where` clauses) or a block inside it
//   would end an ATX heading early and leave the rest as a paragraph, so they become spaces;
// - inline code holding links (rustdoc's `Inner(<a>Bang</a>)`, Sphinx's cross references):
//   Markdown parses nothing inside a code span, so `[Bang](url)` there would be literal text.
//   The code is split around each link: `Inner(`[`Bang`](url)`)`, so the text reads the same
//   and the link stays a link;
// - link destinations: turndown backslash-escapes every parenthesis (`Git_\(software\)`), which
//   CommonMark allows but many Markdown consumers and link extractors read literally. Balanced
//   parentheses are valid as they are in a destination and are written so; a title holding
//   double quotes is written in single quotes (or parentheses) rather than with escapes.
import type TurndownService from "turndown";

const HEADINGS = new Set(["H1", "H2", "H3", "H4", "H5", "H6"]);

function insideHeading(node: Node): boolean {
  for (let p = node.parentNode; p; p = p.parentNode) if (HEADINGS.has(p.nodeName)) return true;
  return false;
}

/** True when every ")" closes an earlier "(" and none stays open. */
function balanced(s: string): boolean {
  let depth = 0;
  for (const ch of s) {
    if (ch === "(") depth++;
    else if (ch === ")" && --depth < 0) return false;
  }
  return depth === 0;
}

/** A link destination as CommonMark reads it: bare when it can be, escaped or in <…> otherwise. */
export function linkDestination(href: string): string {
  if (!/[\s<>]/.test(href) && balanced(href)) return href;
  const escaped = href.replace(/([<>()])/g, "\\$1");
  return /\s/.test(escaped) ? `<${escaped}>` : escaped;
}

/** A link title in the first of "…", '…', (…) that needs no escape inside it ("…" escaped otherwise). */
export function linkTitle(raw: string | null): string {
  const title = (raw ?? "").replace(/(\n+\s*)+/g, "\n");
  if (!title) return "";
  if (!title.includes('"')) return ` "${title}"`;
  if (!title.includes("'")) return ` '${title}'`;
  if (!/[()]/.test(title)) return ` (${title})`;
  return ` "${title.replace(/"/g, '\\"')}"`;
}

function inlineLink(content: string, a: HTMLElement): string {
  return `[${content}](${linkDestination(a.getAttribute("href") ?? "")}${linkTitle(a.getAttribute("title"))})`;
}

/** A code span of `text` (whitespace at its ends left outside, where CommonMark would trim it). */
function codeSpan(text: string): string {
  const [, lead = "", body = "", trail = ""] = /^(\s*)([\s\S]*?)(\s*)$/.exec(text.replace(/\r?\n|\r/g, " ")) ?? [];
  if (!body) return text;
  let delimiter = "`";
  const runs: string[] = body.match(/`+/g) ?? [];
  while (runs.includes(delimiter)) delimiter += "`";
  const pad = /^`|`$/.test(body) ? " " : "";
  return `${lead}${delimiter}${pad}${body}${pad}${delimiter}${trail}`;
}

/** The link (an <a href> inside `code`) that holds `node`, if any. */
function linkOf(node: Node, code: Node): HTMLElement | undefined {
  for (let p = node.parentNode; p && p !== code; p = p.parentNode) {
    if (p.nodeName === "A" && (p as HTMLElement).getAttribute("href")) return p as HTMLElement;
  }
  return undefined;
}

/** The text nodes under `node`, in document order. */
function textNodes(node: Node, out: Node[] = []): Node[] {
  for (const child of Array.from(node.childNodes)) {
    if (child.nodeType === 3) out.push(child);
    else textNodes(child, out);
  }
  return out;
}

/** Inline code holding links, as code spans around Markdown links whose text is code. */
function splitCode(code: HTMLElement): string {
  const runs: { link: HTMLElement | undefined; text: string }[] = [];
  for (const text of textNodes(code)) {
    const link = linkOf(text, code);
    const last = runs.at(-1);
    if (last && last.link === link) last.text += text.nodeValue ?? "";
    else runs.push({ link, text: text.nodeValue ?? "" });
  }
  return runs.map((r) => (r.link && r.text.trim() ? inlineLink(codeSpan(r.text), r.link) : codeSpan(r.text))).join("");
}

export function inlineRules(service: TurndownService): void {
  service.addRule("inlineLink", {
    filter: (node) => node.nodeName === "A" && Boolean(node.getAttribute("href")),
    replacement: (content, node) => inlineLink(content, node as HTMLElement),
  });
  service.addRule("codeWithLinks", {
    filter: (node) =>
      node.nodeName === "CODE" && node.parentNode?.nodeName !== "PRE" && node.querySelector("a[href]") !== null,
    replacement: (_content, node) => splitCode(node as HTMLElement),
  });
  service.addRule("headingBreak", {
    filter: (node) => node.nodeName === "BR" && insideHeading(node),
    replacement: () => " ",
  });
  service.addRule("heading", {
    filter: ["h1", "h2", "h3", "h4", "h5", "h6"],
    replacement(content, node) {
      const text = content.replace(/\s*\n\s*/g, " ").trim();
      return text ? `\n\n${"#".repeat(Number(node.nodeName.charAt(1)))} ${text}\n\n` : "";
    },
  });
}
