// Documents to Markdown, for every service that ingests them (the scraper's PDF answers, search's
// documents API, the console's uploads): Markdown and plain text as they are, HTML through the
// scraper's converter (html/), PDF through PDF.js. The two converters are loaded on their first
// document, not with the service: uploads are occasional, and cheerio, turndown and their DOM
// (html/) and PDF.js are megabytes of code a process otherwise holds for nothing.
import { type ConvertedDocument, DocumentError, type PdfOptions } from "./errors.ts";

export { type ConvertedDocument, DocumentError, type DocumentErrorReason, type PdfOptions } from "./errors.ts";

/** PDF to Markdown (pdf.ts), loading PDF.js on first use. */
export async function pdfToMarkdown(data: Uint8Array, opts: PdfOptions = {}): Promise<ConvertedDocument> {
  return (await import("./pdf.ts")).pdfToMarkdown(data, opts);
}

/** The formats a document may be given in, by media type (parameters such as charset ignored). */
export const DOCUMENT_TYPES = {
  "text/markdown": "markdown",
  "text/x-markdown": "markdown",
  "text/plain": "text",
  "text/html": "html",
  "application/xhtml+xml": "html",
  "application/pdf": "pdf",
} as const;

export type DocumentFormat = (typeof DOCUMENT_TYPES)[keyof typeof DOCUMENT_TYPES];

/** The format of a media type ("text/html; charset=utf-8" → html), undefined when unsupported. */
export function formatOf(contentType: string | undefined): DocumentFormat | undefined {
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  return (DOCUMENT_TYPES as Record<string, DocumentFormat>)[type];
}

/** Markdown of a document; text formats are read as UTF-8. */
export async function toMarkdown(
  format: DocumentFormat,
  data: Uint8Array,
  opts: PdfOptions = {},
): Promise<ConvertedDocument> {
  if (format === "pdf") return pdfToMarkdown(data, opts);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(data);
  } catch {
    throw new DocumentError("invalid", `the ${format} document is not valid UTF-8`);
  }
  if (format === "html") {
    const { htmlTitle, htmlToMarkdown } = await import("./html/index.ts");
    const title = htmlTitle(text);
    return { markdown: htmlToMarkdown(text), ...(title ? { title } : {}) };
  }
  return { markdown: text.replace(/\r\n?/g, "\n").trim() };
}
