// Converts PDFs with the shared converter and counts what came out (headings, code blocks, list
// items) and how long it took, for docs/search.md's comparison. A Markdown file given instead of
// a PDF (another converter's output) is counted the same way.
//   node bench/documents/pdf-markdown.ts /usr/share/doc/libtasn1-doc/libtasn1.pdf other.md ...
import { readFileSync } from "node:fs";
import { pdfToMarkdown } from "../../services/shared/src/documents/pdf.ts";

function counts(markdown: string) {
  return {
    headings: (markdown.match(/^#{1,6} /gm) ?? []).length,
    level5plus: (markdown.match(/^#{5,6} /gm) ?? []).length,
    codeBlocks: (markdown.match(/^(```|~~~~)/gm) ?? []).length / 2,
    listItems: (markdown.match(/^(- |\d+\. )/gm) ?? []).length,
  };
}

for (const file of process.argv.slice(2)) {
  const started = performance.now();
  const markdown = file.endsWith(".md")
    ? readFileSync(file, "utf8")
    : (await pdfToMarkdown(readFileSync(file))).markdown;
  const ms = Math.round(performance.now() - started);
  console.log(JSON.stringify({ file, ms, chars: markdown.length, ...counts(markdown) }));
}
