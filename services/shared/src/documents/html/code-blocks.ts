// Code blocks: every <pre> (with or without a <code> child, the common form on documentation
// sites) becomes a fenced block holding its text verbatim: no Markdown escaping, no reflow, <br>
// as a line break. The language comes from the usual class conventions on the <pre>, its
// <code> or a wrapping element: `language-x`, `lang-x`, `highlight-x` (Sphinx), `brush: x`
// (SyntaxHighlighter), `sourceCode x` (pandoc) or a bare language name (rustdoc's `rust`).
import type TurndownService from "turndown";

const BARE_LANGUAGES = new Set([
  "bash",
  "c",
  "console",
  "cpp",
  "css",
  "go",
  "html",
  "java",
  "javascript",
  "js",
  "json",
  "python",
  "ruby",
  "rust",
  "sh",
  "shell",
  "sql",
  "ts",
  "typescript",
  "xml",
  "yaml",
]);

/** Sphinx's and Pygments' names for "no highlighting". */
const NO_LANGUAGE = new Set(["default", "none", "text", "plaintext", "nohighlight", "notranslate", "plain"]);

/** The language a class attribute names, if any. */
export function languageOf(className: string | null | undefined): string | undefined {
  if (!className) return undefined;
  const brush = /(?:^|\s|;)brush:\s*([\w+#-]+)/i.exec(className);
  if (brush) return clean(brush[1]);
  const tokens = className.split(/\s+/).filter(Boolean);
  for (const token of tokens) {
    const m = /^(?:language|lang|highlight|source)-([\w+#.-]+)$/i.exec(token);
    if (m) return clean(m[1]);
  }
  const sourceCode = tokens.indexOf("sourceCode");
  if (sourceCode >= 0 && tokens[sourceCode + 1]) return clean(tokens[sourceCode + 1]);
  for (const token of tokens) if (BARE_LANGUAGES.has(token.toLowerCase())) return token.toLowerCase();
  return undefined;
}

function clean(raw: string | undefined): string | undefined {
  const lang = (raw ?? "").toLowerCase().replace(/[^\w+#.-]/g, "");
  return lang && !NO_LANGUAGE.has(lang) ? lang : undefined;
}

/** The language of a <pre>: its own class, its <code>'s, then up to three wrapping elements'. */
function preLanguage(pre: HTMLElement): string {
  const code = pre.querySelector("code");
  let lang = languageOf(pre.getAttribute("class")) ?? languageOf(code?.getAttribute("class"));
  let parent = pre.parentElement;
  for (let i = 0; !lang && parent && i < 3; i++, parent = parent.parentElement) {
    lang = languageOf(parent.getAttribute("class"));
  }
  return lang ?? "";
}

/** The text of a node as it reads: <br> is a line break, everything else its text. */
function verbatim(node: Node): string {
  if (node.nodeType === 3) return node.nodeValue ?? "";
  if (node.nodeName === "BR") return "\n";
  let out = "";
  for (const child of Array.from(node.childNodes)) out += verbatim(child);
  return out;
}

/** The fence: three backticks, or one more than the longest run inside the code. */
function fenceFor(code: string): string {
  const longest = Math.max(0, ...Array.from(code.matchAll(/`+/g), (m) => m[0].length));
  return "`".repeat(Math.max(3, longest + 1));
}

export function codeBlocks(service: TurndownService): void {
  service.addRule("preformatted", {
    filter: (node) => node.nodeName === "PRE",
    replacement(_content, node) {
      const pre = node as HTMLElement;
      const code = verbatim(pre).replace(/^\n/, "").replace(/\n+$/, "");
      if (!code.trim()) return "";
      const fence = fenceFor(code);
      return `\n\n${fence}${preLanguage(pre)}\n${code}\n${fence}\n\n`;
    },
  });
}
