// PDF to Markdown: PDF.js (Mozilla's parser, in unpdf's serverless build: pure JavaScript, no
// worker file, no native code, nothing fetched at run time) reads each page's positioned text,
// and pdf-layout.ts turns it into headings, paragraphs, lists and code blocks. Used by the
// scraper (a PDF answered by a scraped URL) and by search (a PDF uploaded to a knowledge base).
import { getResolvedPDFJS } from "unpdf";
import { type ConvertedDocument, DocumentError, type PdfOptions } from "./errors.ts";
import { layoutToMarkdown, type TextRun } from "./pdf-layout.ts";

export { type ConvertedDocument, DocumentError, type DocumentErrorReason, type PdfOptions } from "./errors.ts";

interface PdfTextItem {
  str?: string;
  transform?: number[];
  width?: number;
  fontName?: string;
  hasEOL?: boolean;
}

/** The Markdown of a PDF; a DocumentError when it is not a PDF, damaged, or password-protected. */
export async function pdfToMarkdown(data: Uint8Array, opts: PdfOptions = {}): Promise<ConvertedDocument> {
  if (!looksLikePdf(data)) throw new DocumentError("invalid", "not a PDF (no %PDF- header)");
  const pdfjs = await getResolvedPDFJS();
  // PDF.js takes ownership of the buffer it is given: a copy keeps the caller's intact.
  const task = pdfjs.getDocument({
    data: new Uint8Array(data),
    useSystemFonts: false,
    disableFontFace: true,
    verbosity: 0,
  });
  const onAbort = () => void task.destroy();
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    let doc: Awaited<typeof task.promise>;
    try {
      doc = await task.promise;
    } catch (err) {
      const name = (err as Error).name;
      if (name === "PasswordException") throw new DocumentError("encrypted", "the PDF is password-protected");
      throw new DocumentError("invalid", `the PDF cannot be read: ${(err as Error).message.slice(0, 200)}`);
    }
    const maxPages = opts.maxPages ?? 2000;
    if (doc.numPages > maxPages) {
      throw new DocumentError("too_large", `the PDF has ${doc.numPages} pages; at most ${maxPages} are converted`);
    }
    const pages: TextRun[][] = [];
    for (let n = 1; n <= doc.numPages; n++) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      const page = await doc.getPage(n);
      const content = await page.getTextContent();
      const styles = content.styles as Record<string, { fontFamily?: string }>;
      pages.push(
        (content.items as PdfTextItem[]).flatMap((item) => {
          if (typeof item.str !== "string" || !item.transform) return [];
          const [a = 0, b = 0, , , e = 0, f = 0] = item.transform;
          return [
            {
              str: item.str,
              x: e,
              y: f,
              width: item.width ?? 0,
              size: Math.hypot(a, b),
              mono: styles[item.fontName ?? ""]?.fontFamily === "monospace",
              eol: item.hasEOL === true,
            },
          ];
        }),
      );
      page.cleanup();
    }
    const info = (await doc.getMetadata().catch(() => undefined))?.info as { Title?: unknown } | undefined;
    const title = typeof info?.Title === "string" && info.Title.trim() ? info.Title.trim() : undefined;
    const markdown = layoutToMarkdown(pages);
    return { markdown, ...(title ? { title } : {}), pages: pages.length };
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
    void task.destroy().catch(() => {});
  }
}

/** A PDF starts with %PDF- within its first KiB (the specification allows leading bytes). */
export function looksLikePdf(data: Uint8Array): boolean {
  const head = Buffer.from(data.subarray(0, 1024)).toString("latin1");
  return head.includes("%PDF-");
}
