// Tokenization from the model folder's tokenizer.json through @huggingface/tokenizers (the pure
// JS tokenizers of transformers.js): WordPiece, BPE and Unigram models with the normalizer,
// pre-tokenizer and post-processor the file declares. The library has no truncation, so it is
// done here as HuggingFace tokenizers (Rust) does it: the text's tokens are cut to the budget left
// after the special tokens the post-processor adds, from the right, then post-processed; the ids
// are those of Python `tokenizers` with enable_truncation(max_length) (tokenizer.test.ts checks it).
import { Tokenizer } from "@huggingface/tokenizers";

export class ModelTokenizer {
  private readonly tokenizer: Tokenizer;
  /** Special tokens the post-processor adds to one sequence ([CLS] and [SEP]: 2; none: 0). */
  private readonly specials: number;
  private readonly unkId: number;
  /** The id padded positions get (masked out by the attention mask, so any valid id would do). */
  readonly padId: number;

  constructor(tokenizerJson: Record<string, unknown>, tokenizerConfig: Record<string, unknown> = {}) {
    this.tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
    this.specials = this.withSpecials([]).length;
    const padding = tokenizerJson.padding as { pad_id?: number } | null | undefined;
    const padToken = typeof tokenizerConfig.pad_token === "string" ? tokenizerConfig.pad_token : undefined;
    this.padId = padding?.pad_id ?? (padToken ? this.tokenizer.token_to_id(padToken) : undefined) ?? 0;
    // Tokens the vocabulary lacks map to the model's unknown token, as the library's own encode() does.
    this.unkId = this.tokenizer.model?.unk_token_id ?? this.padId;
  }

  private withSpecials(tokens: string[]): string[] {
    const post = this.tokenizer.post_processor;
    return post ? post(tokens, null, true).tokens : tokens;
  }

  /** The ids of one text, special tokens included, at most maxTokens of them. */
  encode(text: string, maxTokens: number): number[] {
    const tokens = this.tokenizer.tokenize(text, { add_special_tokens: false });
    const budget = Math.max(0, maxTokens - this.specials);
    const kept = tokens.length > budget ? tokens.slice(0, budget) : tokens;
    return this.withSpecials(kept).map((t) => this.tokenizer.token_to_id(t) ?? this.unkId);
  }
}
