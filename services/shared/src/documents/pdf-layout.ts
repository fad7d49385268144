// The layout half of PDF to Markdown, pure and synchronous: text runs (what PDF.js's
// getTextContent gives per page: string, position, size, font family) become lines, and lines
// become Markdown blocks. A PDF has no paragraphs, headings or lists, only positioned glyphs, so
// each is inferred:
// - body size: the font size carrying the most characters; a line set larger (by 12 % or more)
//   is a heading, the largest such size level 1, the next level 2, ... (at most four levels);
// - a paragraph ends at a vertical gap clearly larger than the usual line spacing or at an
//   indented first line; lines of a paragraph are joined, a word hyphenated across lines rejoined;
// - a line starting with a bullet glyph, a dash or "1." / "1)" is a list item, and the indented
//   lines under it its continuation;
// - lines set in a monospaced font (PDF.js reports the family as "monospace") are a fenced code
//   block, kept line by line with their indentation;
// - a line repeated at the top or bottom of most pages (running headers and footers) and a lone
//   page number are dropped.
// Tables come out as their cells' text in reading order, images and links' targets are lost.

export interface TextRun {
  str: string;
  x: number;
  y: number;
  width: number;
  size: number;
  mono: boolean;
  /** The run ends its line (PDF.js's hasEOL). */
  eol: boolean;
}

interface Line {
  text: string;
  x: number;
  y: number;
  size: number;
  mono: boolean;
  page: number;
}

const BULLET = /^([•●▪◦‣∙·■□➢►\u2013*-]|\d{1,3}[.)])\s+/u;
const PAGE_NUMBER = /^(page\s+)?(\d{1,4}|[ivxlc]{1,6})(\s*(of|\/)\s*\d{1,4})?$/i;

const round = (n: number) => Math.round(n * 2) / 2;

/** One page's runs as lines, top to bottom. */
function linesOf(runs: TextRun[], page: number): Line[] {
  const lines: Line[] = [];
  let cur: (Line & { end: number; chars: Map<number, number> }) | undefined;
  const close = () => {
    if (cur && cur.text.trim() !== "") {
      // The line's size: the one most of its characters are set in.
      cur.size = [...cur.chars.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? cur.size;
      lines.push({ text: cur.text.replace(/\s+$/, ""), x: cur.x, y: cur.y, size: cur.size, mono: cur.mono, page });
    }
    cur = undefined;
  };
  for (const r of runs) {
    const blank = r.str.trim() === "";
    if (cur && Math.abs(r.y - cur.y) > Math.max(r.size, cur.size) * 0.5) close();
    if (!cur && blank) {
      if (r.eol) close();
      continue;
    }
    const size = round(r.size);
    if (!cur) {
      cur = { text: "", x: r.x, y: r.y, size, mono: r.mono, page, end: r.x, chars: new Map() };
    } else if (r.x - cur.end > size * 0.15 && !/\s$/.test(cur.text) && !/^\s/.test(r.str)) {
      // A gap between runs that PDF.js did not fill with a space.
      cur.text += r.mono && cur.mono ? " ".repeat(Math.max(1, Math.round((r.x - cur.end) / (size * 0.6)))) : " ";
    }
    cur.text += r.str;
    cur.end = r.x + r.width;
    if (!blank) {
      cur.mono &&= r.mono;
      cur.chars.set(size, (cur.chars.get(size) ?? 0) + r.str.length);
    }
    if (r.eol) close();
  }
  close();
  return lines;
}

/** Lines repeated at the top or bottom of at least half the pages (and two), digits ignored. */
function runningLines(pages: Line[][]): Set<string> {
  const repeated = new Set<string>();
  if (pages.length < 2) return repeated;
  const counts = new Map<string, number>();
  for (const lines of pages) {
    const edges = new Set([...lines.slice(0, 2), ...lines.slice(-2)].map((l) => norm(l.text)));
    for (const e of edges) counts.set(e, (counts.get(e) ?? 0) + 1);
  }
  for (const [text, n] of counts) if (n >= Math.max(2, pages.length / 2)) repeated.add(text);
  return repeated;
}

const norm = (t: string) => t.replace(/\d+/g, "#").replace(/\s+/g, " ").trim().toLowerCase();

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

/** The document's lines in reading order, without running headers, footers and page numbers. */
function contentLines(pageRuns: TextRun[][]): Line[] {
  const pages = pageRuns.map((runs, i) => linesOf(runs, i));
  const running = runningLines(pages);
  return pages.flatMap((ls) =>
    ls.filter((l, i) => {
      const edge = i < 2 || i >= ls.length - 2;
      return !(edge && (running.has(norm(l.text)) || PAGE_NUMBER.test(l.text.trim())));
    }),
  );
}

/** The body text's size, each line's heading level (0: not a heading), and the usual line spacing. */
function typeScale(lines: Line[]): { body: number; level: (l: Line) => number; spacing: number } {
  const bySize = new Map<number, number>();
  for (const l of lines) bySize.set(l.size, (bySize.get(l.size) ?? 0) + l.text.length);
  const body = [...bySize.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 10;
  const headingSizes = [...bySize.keys()].filter((s) => s >= body * 1.12).sort((a, b) => b - a);
  const level = (l: Line) => {
    const i = headingSizes.indexOf(l.size);
    return i < 0 || l.mono || l.text.length > 200 ? 0 : Math.min(i + 1, 4);
  };
  // The usual distance between two lines of one paragraph.
  const gaps: number[] = [];
  for (let i = 1; i < lines.length; i++) {
    const a = lines[i - 1] as Line;
    const b = lines[i] as Line;
    if (a.page === b.page && a.size === body && b.size === body && a.y > b.y) gaps.push(a.y - b.y);
  }
  return { body, level, spacing: median(gaps) || body * 1.2 };
}

/** Markdown blocks as lines arrive: the paragraph or list item and the code block being built. */
class Blocks {
  readonly out: string[] = [];
  private para: { text: string; x: number; list: boolean } | undefined;
  private code: Line[] = [];

  heading(h: number, text: string, continues: boolean): void {
    this.flush();
    // A heading set over two lines stays one heading.
    const last = this.out[this.out.length - 1];
    if (continues && last?.startsWith(`${"#".repeat(h)} `)) this.out[this.out.length - 1] = `${last} ${text}`;
    else this.out.push(`${"#".repeat(h)} ${text}`);
  }

  codeLine(l: Line): void {
    this.flushPara();
    this.code.push(l);
  }

  /** A line of prose: a new list item, a new paragraph (a wide gap, an indent), or more of the current one. */
  prose(l: Line, prev: Line | undefined, spacing: number): void {
    this.flushCode();
    const text = l.text.trim();
    const bullet = BULLET.exec(text);
    if (bullet) {
      this.flushPara();
      const marker = /\d/.test(bullet[1] as string) ? `${(bullet[1] as string).replace(")", ".")} ` : "- ";
      this.para = { text: marker + text.slice(bullet[0].length), x: l.x, list: true };
      return;
    }
    const para = this.para;
    const gap = prev && prev.page === l.page ? prev.y - l.y : spacing;
    const breaks =
      !para ||
      gap > spacing * 1.45 ||
      gap < 0 ||
      (para.list ? l.x <= para.x + 1 : prev !== undefined && prev.page === l.page && l.x > prev.x + l.size * 0.8);
    if (breaks) {
      this.flushPara();
      this.para = { text, x: l.x, list: false };
    } else if (/\p{Ll}-$/u.test(para.text) && /^\p{Ll}/u.test(text)) {
      // "manip-" + "ulation": a word hyphenated at the end of the line.
      para.text = para.text.slice(0, -1) + text;
    } else {
      para.text += ` ${text}`;
    }
  }

  flush(): void {
    this.flushPara();
    this.flushCode();
  }

  private flushPara(): void {
    if (this.para) this.out.push(this.para.text.replace(/\s+/g, " ").trim());
    this.para = undefined;
  }

  private flushCode(): void {
    if (this.code.length === 0) return;
    const left = Math.min(...this.code.map((l) => l.x));
    const text = this.code
      .map((l) => " ".repeat(Math.max(0, Math.round((l.x - left) / (l.size * 0.6)))) + l.text)
      .join("\n");
    const fence = text.includes("```") ? "~~~~" : "```";
    this.out.push(`${fence}\n${text}\n${fence}`);
    this.code = [];
  }
}

/** Markdown of a document given as its pages' text runs. */
export function layoutToMarkdown(pageRuns: TextRun[][]): string {
  const lines = contentLines(pageRuns);
  if (lines.length === 0) return "";
  const { level, spacing } = typeScale(lines);
  const blocks = new Blocks();
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i] as Line;
    const prev = lines[i - 1];
    const h = level(l);
    if (h > 0) blocks.heading(h, l.text.trim(), prev !== undefined && level(prev) === h && prev.page === l.page);
    else if (l.mono) blocks.codeLine(l);
    else blocks.prose(l, prev, spacing);
  }
  blocks.flush();
  return blocks.out.join("\n\n");
}
