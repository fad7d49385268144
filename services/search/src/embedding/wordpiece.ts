// BERT's uncased tokenizer (BasicTokenizer + WordPiece), as all-MiniLM-L6-v2 was trained with:
// NFD + strip accents + lower case, split on whitespace and punctuation, CJK characters as
// single tokens, then greedy longest-match WordPiece with "##" continuations.

export interface Encoded {
  ids: number[];
}

const CLS = "[CLS]";
const SEP = "[SEP]";
const UNK = "[UNK]";
const PAD = "[PAD]";
const MAX_WORD_CHARS = 100;

function isPunctuation(ch: string): boolean {
  const cp = ch.codePointAt(0) ?? 0;
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) {
    return true;
  }
  return /\p{P}/u.test(ch);
}

function isCjk(cp: number): boolean {
  return (
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) ||
    (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) ||
    (cp >= 0x2b820 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x2f800 && cp <= 0x2fa1f)
  );
}

/** Splits text into basic tokens (before WordPiece). */
export function basicTokenize(text: string): string[] {
  const normalized = text
    .normalize("NFD")
    .replace(/\p{Mn}/gu, "")
    .toLowerCase();
  const out: string[] = [];
  let current = "";
  const flush = () => {
    if (current) out.push(current);
    current = "";
  };
  for (const ch of normalized) {
    const cp = ch.codePointAt(0) ?? 0;
    if (cp === 0 || cp === 0xfffd || /\p{Cc}/u.test(ch)) {
      if (ch === "\t" || ch === "\n" || ch === "\r") flush();
      continue;
    }
    if (/\s/u.test(ch)) {
      flush();
    } else if (isPunctuation(ch) || isCjk(cp)) {
      flush();
      out.push(ch);
    } else {
      current += ch;
    }
  }
  flush();
  return out;
}

export class WordPieceTokenizer {
  private readonly vocab: Map<string, number>;
  readonly clsId: number;
  readonly sepId: number;
  readonly unkId: number;
  readonly padId: number;

  constructor(vocabText: string) {
    this.vocab = new Map();
    const lines = vocabText.split(/\r?\n/);
    for (let i = 0; i < lines.length; i++) {
      const token = lines[i];
      if (token !== undefined && token !== "" && !this.vocab.has(token)) this.vocab.set(token, i);
    }
    const id = (t: string) => {
      const v = this.vocab.get(t);
      if (v === undefined) throw new Error(`vocabulary has no ${t} token`);
      return v;
    };
    this.clsId = id(CLS);
    this.sepId = id(SEP);
    this.unkId = id(UNK);
    this.padId = id(PAD);
  }

  get size(): number {
    return this.vocab.size;
  }

  private wordPiece(word: string): number[] {
    const chars = [...word];
    if (chars.length > MAX_WORD_CHARS) return [this.unkId];
    const ids: number[] = [];
    let start = 0;
    while (start < chars.length) {
      let end = chars.length;
      let found: number | undefined;
      while (start < end) {
        const piece = (start > 0 ? "##" : "") + chars.slice(start, end).join("");
        found = this.vocab.get(piece);
        if (found !== undefined) break;
        end--;
      }
      if (found === undefined) return [this.unkId];
      ids.push(found);
      start = end;
    }
    return ids;
  }

  /** [CLS] tokens [SEP], truncated to maxLength ids in all. */
  encode(text: string, maxLength: number): Encoded {
    const ids = [this.clsId];
    const budget = maxLength - 1;
    outer: for (const word of basicTokenize(text)) {
      for (const id of this.wordPiece(word)) {
        if (ids.length >= budget) break outer;
        ids.push(id);
      }
    }
    ids.push(this.sepId);
    return { ids };
  }
}
