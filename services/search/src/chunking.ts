// Recursive character chunking (the scheme LangChain's RecursiveCharacterTextSplitter made
// common): split on the coarsest separator present (paragraphs, lines, sentences, words,
// characters), merge neighbouring pieces up to `size` characters, and start each next chunk
// with up to `overlap` characters of the previous one's tail, cut at piece boundaries.

export interface ChunkingOptions {
  size: number;
  overlap: number;
}

const SEPARATORS = ["\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ", ""];

function splitKeep(text: string, sep: string): string[] {
  if (sep === "") return [...text];
  const parts = text.split(sep);
  // Keep the separator with the piece before it so joining pieces restores the text.
  return parts.map((p, i) => (i < parts.length - 1 ? p + sep : p)).filter((p) => p.length > 0);
}

function merge(pieces: string[], size: number, overlap: number): string[] {
  const chunks: string[] = [];
  const window: string[] = [];
  let length = 0;
  for (const piece of pieces) {
    if (length + piece.length > size && window.length > 0) {
      chunks.push(window.join(""));
      // Drop pieces from the front until what is left fits the overlap and leaves room.
      while (window.length > 0 && (length > overlap || length + piece.length > size)) {
        length -= (window.shift() as string).length;
      }
    }
    window.push(piece);
    length += piece.length;
  }
  if (window.length > 0) chunks.push(window.join(""));
  return chunks;
}

function split(text: string, size: number, overlap: number, level: number): string[] {
  if (text.length <= size) return [text];
  const sepIndex = SEPARATORS.findIndex((s, i) => i >= level && (s === "" || text.includes(s)));
  const sep = SEPARATORS[sepIndex] ?? "";
  const pieces: string[] = [];
  for (const piece of splitKeep(text, sep)) {
    if (piece.length <= size) pieces.push(piece);
    else pieces.push(...split(piece, size, overlap, sepIndex + 1));
  }
  return merge(pieces, size, overlap);
}

/** Chunks of at most opts.size characters (trimmed, empty ones dropped), in document order. */
export function chunkText(text: string, opts: ChunkingOptions): string[] {
  if (opts.size <= 0) throw new Error("chunk size must be positive");
  const overlap = Math.max(0, Math.min(opts.overlap, opts.size - 1));
  const normalized = text.replace(/\r\n?/g, "\n").trim();
  if (normalized === "") return [];
  return split(normalized, opts.size, overlap, 0)
    .map((c) => c.trim())
    .filter((c) => c.length > 0);
}
