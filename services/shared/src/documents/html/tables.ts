// Tables: a GFM table where the table fits one (one header row, no spanning cells, only inline
// content or paragraphs in cells: paragraphs become <br> breaks, as in DocBook's catalog tables
// whose cells hold a definition paragraph and a description paragraph); otherwise clean HTML
// (structure, spans and inline markup kept, attributes and styling dropped; <tbody> implied),
// which Markdown carries as it is. Layout tables (a single cell, a table holding tables, a
// callout of one text cell per row) are unwrapped: their cells read as paragraphs.
import type TurndownService from "turndown";

const BLOCK_IN_CELL = "ul, ol, dl, pre, table, h1, h2, h3, h4, h5, h6, blockquote, hr";
const KEEP_ATTRIBUTES: Record<string, string[]> = {
  A: ["href"],
  TD: ["colspan", "rowspan"],
  TH: ["colspan", "rowspan"],
};
const CLEAN_TAGS = new Set([
  "TABLE",
  "CAPTION",
  "THEAD",
  "TFOOT",
  "TR",
  "TH",
  "TD",
  "A",
  "CODE",
  "PRE",
  "STRONG",
  "B",
  "EM",
  "I",
  "BR",
  "P",
  "UL",
  "OL",
  "LI",
  "DL",
  "DT",
  "DD",
  "SUB",
  "SUP",
]);

/** The rows of a table in order (thead, tbody, tfoot, or directly under it), not those of nested tables. */
function rowsOf(table: HTMLElement): HTMLElement[] {
  const rows: HTMLElement[] = [];
  for (const child of Array.from(table.children)) {
    if (child.nodeName === "TR") rows.push(child as HTMLElement);
    else if (["THEAD", "TBODY", "TFOOT"].includes(child.nodeName)) {
      for (const tr of Array.from(child.children)) if (tr.nodeName === "TR") rows.push(tr as HTMLElement);
    }
  }
  return rows;
}

const cellsOf = (row: HTMLElement) =>
  Array.from(row.children).filter((c) => c.nodeName === "TD" || c.nodeName === "TH") as HTMLElement[];

const span = (cell: HTMLElement, name: string) => Number(cell.getAttribute(name) ?? "1") || 1;

/** How a table is written: as GFM, as clean HTML, or unwrapped (layout). */
export function tableKind(table: HTMLElement): "gfm" | "html" | "layout" {
  const rows = rowsOf(table);
  const cells = rows.flatMap(cellsOf);
  if (cells.length <= 1 || table.querySelector("table")) return "layout";
  // A callout drawn as a table (DocBook's admonitions: an icon cell spanning two rows beside
  // the title, the text below): at most two rows hold text, each in at most one cell.
  const textRows = rows.map((r) => cellsOf(r).filter((c) => (c.textContent ?? "").trim()).length).filter(Boolean);
  if (textRows.length <= 2 && textRows.every((n) => n === 1)) return "layout";
  if (cells.some((c) => span(c, "colspan") > 1 || span(c, "rowspan") > 1)) return "html";
  if (cells.some((c) => c.querySelector(BLOCK_IN_CELL))) return "html";
  // Only the first row may be a header row.
  if (
    rows.slice(1).some((r) => cellsOf(r).every((c) => c.nodeName === "TH") && r.parentElement?.nodeName === "THEAD")
  ) {
    return "html";
  }
  return "gfm";
}

function gfmTable(table: HTMLElement, inline: (html: string) => string): string {
  const rows = rowsOf(table).map((r) =>
    cellsOf(r).map((c) => inline(c.innerHTML).replace(/\n+/g, "<br>").replace(/\|/g, "\\|").trim()),
  );
  const width = Math.max(...rows.map((r) => r.length));
  const line = (cells: string[]) =>
    `| ${Array.from({ length: width }, (_, i) => (cells[i] ?? "").padEnd(3)).join(" | ")} |`;
  const [header = [], ...body] = rows;
  const caption = table.querySelector("caption")?.textContent?.trim();
  const out = [line(header), line(Array.from({ length: width }, () => "---")), ...body.map(line)];
  return `\n\n${caption ? `${caption}\n\n` : ""}${out.join("\n")}\n\n`;
}

/** The table as minimal HTML: the tags above, spans and links kept, whitespace collapsed. */
function cleanHtml(node: Node): string {
  if (node.nodeType === 3) {
    return (node.nodeValue ?? "").replace(/\s+/g, " ").replace(/&/g, "&amp;").replace(/</g, "&lt;");
  }
  if (node.nodeType !== 1) return "";
  const el = node as HTMLElement;
  const inner = Array.from(el.childNodes).map(cleanHtml).join("");
  if (!CLEAN_TAGS.has(el.nodeName)) return inner;
  const tag = el.nodeName.toLowerCase();
  const attrs = (KEEP_ATTRIBUTES[el.nodeName] ?? [])
    .map((name) => [name, el.getAttribute(name)] as const)
    .filter(([name, value]) => value !== null && !(name !== "href" && value === "1"))
    .map(([name, value]) => ` ${name}="${(value ?? "").replace(/"/g, "&quot;")}"`)
    .join("");
  if (el.nodeName === "BR") return "<br>";
  const block = ["TABLE", "THEAD", "TBODY", "TFOOT", "TR", "UL", "OL", "DL"].includes(el.nodeName);
  return block ? `<${tag}${attrs}>\n${inner.trim()}\n</${tag}>\n` : `<${tag}${attrs}>${inner.trim()}</${tag}>`;
}

export function tables(service: TurndownService): void {
  const inline = (html: string) => service.turndown(html);
  service.addRule("table", {
    filter: (node) => node.nodeName === "TABLE" && tableKind(node as HTMLElement) !== "layout",
    replacement(_content, node) {
      const table = node as HTMLElement;
      if (tableKind(table) === "gfm") return gfmTable(table, inline);
      return `\n\n${cleanHtml(table)
        .replace(/\n{2,}/g, "\n")
        .trim()}\n\n`;
    },
  });
  // A layout table's cells read as blocks of their own.
  service.addRule("layoutCell", {
    filter: ["td", "th", "tr", "thead", "tbody", "tfoot"],
    replacement: (content) => `\n\n${content}\n\n`,
  });
}
