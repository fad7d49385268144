// Ground truth from a page's own HTML (the site's main-content region, named per site) and the
// scoring of a converter's Markdown against it. Every measure is a count of hits out of a count
// of expected items, so sites and converters add up:
//   code      <pre> blocks whose text is inside a fenced block of the output, verbatim
//   language  of those with a language in their classes, the fence naming it
//   headings  h1-h6 texts (permalink glyphs removed) present as Markdown headings (ATX, indented
//             or not, or setext), exactly
//   links     link targets (absolute) present as link targets of the output, resolved alike
//             (CommonMark inline links: <…> or bare destinations with balanced parentheses and
//             backslash escapes, titles in "…", '…' or (…); also autolinks, href="…", references)
//   tables    data tables whose cell texts are in table rows of the output (GFM or HTML)
//   wellFormed GFM tables of the output whose rows all have the header's cell count
//   boilerplate navigation texts of the page's chrome absent from the output
import { type Cheerio, type CheerioAPI, load } from "cheerio";
import type { AnyNode } from "domhandler";

export interface Site {
  name: string;
  /** The region that is the page's content. */
  main: string;
  /** Elements inside `main` that are not content (removed before taking the truth). */
  notMain?: string;
  /** Page chrome whose link texts must not reach the output. */
  chrome: string;
}

export interface Truth {
  code: { text: string; lang?: string }[];
  headings: string[];
  links: string[];
  tables: string[][];
  boilerplate: string[];
}

export type Measure = "code" | "language" | "headings" | "links" | "tables" | "wellFormed" | "boilerplate";
export const MEASURES: Measure[] = ["code", "language", "headings", "links", "tables", "wellFormed", "boilerplate"];
export type Score = Record<Measure, { hit: number; of: number }>;

const norm = (s: string) => s.replace(/\s+/g, " ").trim();
const PERMALINK = /^[\s¶#§🔗]*$/u;
const NO_LANGUAGE = new Set(["default", "none", "text", "plaintext", "nohighlight"]);

function languageFromClasses($: CheerioAPI, pre: Cheerio<AnyNode>): string | undefined {
  const classes = [
    pre,
    pre.find("code").first(),
    ...pre
      .parents()
      .slice(0, 3)
      .toArray()
      .map((e) => $(e)),
  ]
    .map((e) => e.attr("class") ?? "")
    .join(" ");
  const m = /(?:^|\s)(?:language|lang|highlight)-([\w+#.-]+)/.exec(classes);
  const lang = m?.[1]?.toLowerCase();
  return lang && !NO_LANGUAGE.has(lang) ? lang : undefined;
}

export function truthOf(html: string, url: string, site: Site): Truth {
  const $ = load(html);
  // Controls (copy buttons, "copy item path") and line numbers are not content.
  $("script, style, button, .linenos, .headerlink").remove();
  const chrome = $(site.chrome);
  const main = $(site.main).first();
  // Navigation inside the content region (a page's table of contents) is not content either.
  main.find(["nav", '[role="navigation"]', ...(site.notMain ? [site.notMain] : [])].join(",")).remove();
  const mainText = norm(main.text());
  const code = main
    .find("pre")
    .toArray()
    .map((el) => {
      const lang = languageFromClasses($, $(el));
      return {
        text: $(el)
          .text()
          .replace(/^\n+|\s+$/g, ""),
        ...(lang ? { lang } : {}),
      };
    })
    .filter((c) => c.text.trim());
  main.find("h1 a, h2 a, h3 a, h4 a, h5 a, h6 a").each((_, a) => {
    if (PERMALINK.test($(a).text()) && ($(a).attr("href") ?? "").startsWith("#")) $(a).remove();
  });
  const headings = main
    .find("h1, h2, h3, h4, h5, h6")
    .toArray()
    .map((h) => norm($(h).text()))
    .filter(Boolean);
  const links = new Set<string>();
  main.find("a[href]").each((_, a) => {
    const href = $(a).attr("href") ?? "";
    if (/^(javascript|mailto|data):/i.test(href) || !norm($(a).text())) return;
    try {
      links.add(new URL(href, url).href);
    } catch {
      // not a URL
    }
  });
  const tables = main
    .find("table")
    .toArray()
    .filter((t) => $(t).find("table").length === 0)
    .map((t) =>
      $(t)
        .find("td, th")
        .toArray()
        .map((c) => norm($(c).text()))
        .filter((c) => c.length > 0 && c.length <= 80),
    )
    .filter((cells, i, all) => cells.length >= 4 && all.indexOf(cells) === i);
  const boilerplate = new Set<string>();
  chrome.find("a").each((_, a) => {
    const text = norm($(a).text());
    if (text.length >= 12 && !mainText.includes(text)) boilerplate.add(text);
  });
  return { code, headings, links: [...links], tables, boilerplate: [...boilerplate] };
}

// A CommonMark inline link's destination (<…>, or bare with balanced parentheses) and optional
// title ("…", '…' or (…)), backslash escapes allowed in both.
const DEST = String.raw`<(?:[^<>\n\\]|\\.)*>|(?:[^()\s\\]|\\.|\((?:[^()\s\\]|\\.)*\))+`;
const TITLE = String.raw`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\((?:[^()\\]|\\.)*\)`;
const LINK_TAIL = String.raw`\]\(\s*(${DEST})(?:\s+(?:${TITLE}))?\s*\)`;
// The text: not opened by an escaped "\[", on one line, escaped brackets allowed inside.
const LINK = new RegExp(String.raw`(?<!\\)\[((?:[^\]\\\n]|\\.)*)${LINK_TAIL}`, "g");
/** A destination as written → the URL it names (angle brackets and backslash escapes removed). */
const destination = (raw: string) => raw.replace(/^<([\s\S]*)>$/, "$1").replace(/\\([!-/:-@[-`{-~])/g, "$1");

/** Markdown reduced to its words: formatting, escapes and tags dropped, for text comparisons. */
const plain = (md: string) =>
  norm(
    md
      .replace(/<\/?[a-zA-Z][^<>]*>/g, " ")
      .replace(LINK, "$1")
      .replace(/[\\*_`]/g, "")
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&amp;/g, "&"),
  );

/** Blockquote markers removed: code and tables inside quotes count like any other. */
const unquote = (md: string) => md.replace(/^(?:[ \t]*>[ \t]?)+/gm, "");

/** Fenced blocks, also when indented under a list item (the body loses the fence's indentation). */
function fencedBlocks(md: string): { info: string; body: string }[] {
  const out: { info: string; body: string }[] = [];
  const re = /^( *)(`{3,}|~{3,})[ \t]*([^\n`]*)\n([\s\S]*?)\n?^\1\2[ \t]*$/gm;
  // Both as written and unquoted: a REPL's ">>>" lines must not lose their ">" outside quotes.
  for (const m of [...md.matchAll(re), ...unquote(md).matchAll(re)]) {
    const indent = new RegExp(`^ {0,${(m[1] ?? "").length}}`, "gm");
    out.push({ info: (m[3] ?? "").trim().split(/\s+/)[0] ?? "", body: (m[4] ?? "").replace(indent, "") });
  }
  return out;
}

const codeKey = (s: string) =>
  s
    .split("\n")
    .map((l) => l.replace(/\s+$/, ""))
    .join("\n")
    .trim();

function gfmTables(md: string): string[][] {
  const tables: string[][] = [];
  let current: string[] = [];
  for (const line of [...unquote(md).split("\n"), ""]) {
    if (/^\s*\|.*\|\s*$/.test(line)) current.push(line);
    else if (current.length) {
      tables.push(current);
      current = [];
    }
  }
  return tables;
}

const cellCount = (row: string) => row.trim().replace(/\\\|/g, "").split("|").length - 2;

/** Expected items a converter missed, per measure (what `--misses` lists). */
export type Misses = Partial<Record<Measure, string[]>>;

/** Scores `md`; with `misses`, also records each expected item that was not found. */
export function score(md: string, url: string, truth: Truth, misses?: Misses): Score {
  const s = Object.fromEntries(MEASURES.map((m) => [m, { hit: 0, of: 0 }])) as Score;
  const miss = (m: Measure, item: string) => {
    if (misses) misses[m] = [...(misses[m] ?? []), item];
  };
  const fences = fencedBlocks(md).map((f) => ({ info: f.info.toLowerCase(), key: codeKey(f.body) }));
  for (const c of truth.code) {
    const key = codeKey(c.text);
    const match = fences.find((f) => f.key === key) ?? fences.find((f) => key.length > 0 && f.key.includes(key));
    s.code.of++;
    if (match) s.code.hit++;
    else miss("code", c.text.slice(0, 200));
    if (c.lang) {
      s.language.of++;
      if (match?.info === c.lang) s.language.hit++;
      else miss("language", `${c.lang}: ${c.text.slice(0, 80)}`);
    }
  }
  const headings = new Set<string>();
  const lines = md.split("\n");
  lines.forEach((line, i) => {
    // Indented too: a heading inside a list item (DocBook's notes within lists) is indented with it.
    const atx = /^ *#{1,6}\s+(.*?)(\s+#+)?\s*$/.exec(line);
    if (atx) headings.add(plain(atx[1] ?? ""));
    else if (/^(=+|-+)\s*$/.test(lines[i + 1] ?? "") && line.trim() && !/^\s*\|/.test(line)) headings.add(plain(line));
  });
  for (const h of truth.headings) {
    s.headings.of++;
    if (headings.has(plain(h))) s.headings.hit++;
    else miss("headings", h);
  }
  const targets = new Set<string>();
  const links = new RegExp(String.raw`${LINK_TAIL}|<(https?:\/\/[^>\s]+)>|href="([^"]+)"|^\[[^\]]+\]:\s*(\S+)`, "gm");
  for (const m of md.matchAll(links)) {
    const raw = (m[1] ? destination(m[1]) : (m[2] ?? m[3] ?? m[4] ?? "")).replace(/&amp;/g, "&");
    try {
      targets.add(new URL(raw, url).href);
    } catch {
      // not a URL
    }
  }
  for (const l of truth.links) {
    s.links.of++;
    if (targets.has(l)) s.links.hit++;
    else miss("links", l);
  }
  const gfm = gfmTables(md);
  const htmlTables = [...md.matchAll(/<table[\s\S]*?<\/table>/g)].map((m) => m[0]);
  const tableText = plain([...gfm.map((t) => t.join("\n")), ...htmlTables].join("\n"));
  for (const cells of truth.tables) {
    s.tables.of++;
    const found = cells.filter((c) => tableText.includes(plain(c))).length;
    if (found >= 0.9 * cells.length) s.tables.hit++;
    else
      miss(
        "tables",
        `${found}/${cells.length} cells; missing: ${cells
          .filter((c) => !tableText.includes(plain(c)))
          .slice(0, 5)
          .join(" · ")}`,
      );
  }
  for (const t of gfm) {
    s.wellFormed.of++;
    const width = cellCount(t[0] ?? "");
    const separator = /^\s*\|(\s*:?-{3,}:?\s*\|)+\s*$/.test(t[1] ?? "");
    if (separator && t.every((row) => cellCount(row) === width)) s.wellFormed.hit++;
    else miss("wellFormed", t.slice(0, 3).join("\n"));
  }
  const text = plain(md);
  for (const b of truth.boilerplate) {
    s.boilerplate.of++;
    if (!text.includes(plain(b))) s.boilerplate.hit++;
    else miss("boilerplate", b);
  }
  return s;
}

export function add(a: Score, b: Score): Score {
  return Object.fromEntries(MEASURES.map((m) => [m, { hit: a[m].hit + b[m].hit, of: a[m].of + b[m].of }])) as Score;
}

export const empty = (): Score => Object.fromEntries(MEASURES.map((m) => [m, { hit: 0, of: 0 }])) as Score;
