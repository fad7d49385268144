// Converts PDFs with the shared converter and counts what came out (headings, code blocks, list
// items) and how long it took, for docs/search.md's comparison. A Markdown file given instead of
// a PDF (another converter's output) is counted the same way. Each file must give non-empty
// Markdown, and each PDF at least one heading, before its line is printed: a converter that
// loses the structure (or the text) would otherwise report a fast, empty conversion.
//   node bench/documents/pdf-markdown.ts /usr/share/doc/libtasn1-doc/libtasn1.pdf other.md ...
//   node bench/documents/pdf-markdown.ts --smoke [files]   (no files: a small PDF made with pdfkit)
import { readFileSync } from "node:fs";
import { pdfToMarkdown } from "../../services/shared/src/documents/pdf.ts";
import { expectAtLeast, expectWork, SMOKE, workChecked } from "../work.ts";

function counts(markdown: string) {
  return {
    headings: (markdown.match(/^#{1,6} /gm) ?? []).length,
    level5plus: (markdown.match(/^#{5,6} /gm) ?? []).length,
    codeBlocks: (markdown.match(/^(```|~~~~)/gm) ?? []).length / 2,
    listItems: (markdown.match(/^(- |\d+\. )/gm) ?? []).length,
  };
}

/** The smoke mode's PDF when no file is given: the test fixture's layout, two sections. */
async function smokePdf(): Promise<Buffer> {
  const { makePdf } = await import("../../services/shared/src/documents/pdf.fixture.ts");
  return makePdf({
    title: "Benchmark manual",
    sections: [
      { heading: "Installing", paragraphs: ["Unpack the archive and run the installer."], bullets: ["one", "two"] },
      { heading: "Configuring", paragraphs: ["Set the port in the configuration file."], code: ["port = 8080"] },
    ],
  });
}

const files = process.argv.slice(2).filter((a) => a !== "--smoke");
const inputs: { file: string; read: () => Promise<Buffer> }[] = files.map((file) => ({
  file,
  read: async () => readFileSync(file),
}));
if (SMOKE && inputs.length === 0) inputs.push({ file: "(generated smoke PDF)", read: smokePdf });
expectAtLeast("files given (PDFs or Markdown)", inputs.length, 1);

let pdfs = 0;
for (const { file, read } of inputs) {
  const bytes = await read();
  const started = performance.now();
  const markdown = file.endsWith(".md") ? bytes.toString("utf8") : (await pdfToMarkdown(bytes)).markdown;
  const ms = Math.round(performance.now() - started);
  const counted = counts(markdown);
  expectWork(markdown.trim().length > 0, `non-empty Markdown from ${file}`);
  if (!file.endsWith(".md")) {
    expectAtLeast(`headings in the Markdown of ${file}`, counted.headings, 1);
    pdfs += 1;
  }
  console.log(JSON.stringify({ file, ms, chars: markdown.length, ...counted }));
}
workChecked(`${inputs.length} files (${pdfs} PDFs) converted to non-empty Markdown, each PDF with headings`);
