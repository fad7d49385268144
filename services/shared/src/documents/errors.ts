// What converting a document can answer, apart from the converters themselves so that a service
// can name these without loading PDF.js or the HTML converter (index.ts loads them on first use).
export type DocumentErrorReason = "invalid" | "encrypted" | "too_large" | "unsupported";

/** A document that cannot be converted; `message` is safe to show to the caller. */
export class DocumentError extends Error {
  readonly reason: DocumentErrorReason;
  constructor(reason: DocumentErrorReason, message: string) {
    super(message);
    this.name = "DocumentError";
    this.reason = reason;
  }
}

export interface ConvertedDocument {
  markdown: string;
  /** The document's own title (PDF Info dictionary), when it has one. */
  title?: string;
  pages?: number;
}

export interface PdfOptions {
  /** Pages beyond this are refused (a bound on the work one request can cause). Default 2000. */
  maxPages?: number;
  /** Stops the conversion (its work runs on the caller's event loop, page by page). */
  signal?: AbortSignal;
}
