import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxDiff } from "./fixtures/max-diff.ts";
import { pythonIds } from "./fixtures/python-tokenizers.ts";
import { tinyEncoder } from "./fixtures/tiny-onnx.ts";
import { locateModelFiles } from "./model-files.ts";
import { EmbeddingModel, lengthBatches, pickOutput } from "./model-runner.ts";

// Vectors of the same model file on onnxruntime's Python runtime with HuggingFace tokenizers,
// one text per run (bench/search/reference_vectors.py wrote them).
const REFERENCE = JSON.parse(readFileSync(new URL("./fixtures/reference-vectors.json", import.meta.url), "utf8")) as {
  texts: string[];
  vectors: number[][];
};

describe("lengthBatches", () => {
  it("groups indices by token length, at most batchSize each, every index once", () => {
    const lengths = [50, 3, 200, 7, 48, 5, 190];
    const batches = lengthBatches(lengths, 3);
    expect(batches).toEqual([[1, 5, 3], [4, 0, 6], [2]]);
    expect(batches.flat().sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it("keeps equal lengths in their original order", () => {
    expect(lengthBatches([4, 4, 4, 4], 2)).toEqual([
      [0, 1],
      [2, 3],
    ]);
  });
});

describe("EmbeddingModel", () => {
  let model: EmbeddingModel;
  beforeAll(async () => {
    model = await EmbeddingModel.load({ ...locateModelFiles(), maxTokens: 256, batchSize: 4, threads: 1 });
  });
  afterAll(() => model.release());

  it("reads the vector width from the model", () => {
    expect(model.dimensions).toBe(384);
  });

  it("matches onnxruntime's Python runtime on the same model file", async () => {
    const { vectors } = await model.embed(REFERENCE.texts);
    REFERENCE.vectors.forEach((ref, i) => {
      expect(maxDiff(vectors[i] as Float32Array, ref), REFERENCE.texts[i]).toBeLessThan(1e-5);
    });
  });

  it("batches by length and gives the vectors back in the texts' order, as if embedded one by one", async () => {
    // Lengths interleaved so every batch of 4 mixes texts from all over the request.
    const texts = Array.from({ length: 10 }, (_, i) => `${"word ".repeat(((i * 7) % 10) * 12 + 1)}#${i}`);
    const batched = await model.embed(texts);
    expect(batched.batches.map((b) => b.size)).toEqual([4, 4, 2]);
    for (const [i, text] of texts.entries()) {
      const { vectors } = await model.embed([text]);
      expect(maxDiff(batched.vectors[i] as Float32Array, vectors[0] as Float32Array), text).toBeLessThan(1e-5);
    }
  });
});

describe("pickOutput", () => {
  it("takes a ready sentence_embedding, else token_embeddings, else last_hidden_state, else the first", () => {
    expect(pickOutput(["token_embeddings", "sentence_embedding"])).toEqual({
      name: "sentence_embedding",
      pooled: true,
    });
    expect(pickOutput(["last_hidden_state", "token_embeddings"])).toEqual({ name: "token_embeddings", pooled: false });
    expect(pickOutput(["pooler_output", "last_hidden_state"])).toEqual({ name: "last_hidden_state", pooled: false });
    expect(pickOutput(["logits"])).toEqual({ name: "logits", pooled: false });
  });
});

// A model folder that is neither BERT nor uncased: litellm's byte-level BPE tokenizer.json
// (scripts/setup.d/41-tokenizers.sh) and a tiny ONNX graph without token_type_ids whose token
// vectors are rows of a known table (fixtures/tiny-onnx.ts), so the expected vector of a text is
// the pooled rows of the ids Python `tokenizers` gives it.
describe("EmbeddingModel on a byte-level BPE folder whose graph has no token_type_ids", () => {
  const DIMS = 8;
  const tokenizerJson = join(homedir(), ".cache/capstan/tokenizers/bpe-anthropic.json");
  const TEXTS = ["Grüße aus München, Straße!", "東京は日本の首都です。", "Hello World and HELLO world", "x"];
  const root = mkdtempSync(join(tmpdir(), "capstan-tiny-model-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  function modelFolder(name: string, pooled: boolean, pooling?: string): { dir: string; table: Float32Array } {
    expect(existsSync(tokenizerJson), `${tokenizerJson} missing: run scripts/setup.d/41-tokenizers.sh`).toBe(true);
    const tok = JSON.parse(readFileSync(tokenizerJson, "utf8")) as {
      model: { vocab: Record<string, number> };
      added_tokens: { id: number }[];
    };
    const vocab = 1 + Math.max(...Object.values(tok.model.vocab), ...tok.added_tokens.map((t) => t.id));
    const table = Float32Array.from({ length: vocab * DIMS }, (_, i) => Math.sin(i * 0.37) + (i % DIMS) / 10);
    const dir = join(root, name);
    mkdirSync(join(dir, "1_Pooling"), { recursive: true });
    writeFileSync(join(dir, "model.onnx"), tinyEncoder(table, vocab, DIMS, pooled));
    symlinkSync(tokenizerJson, join(dir, "tokenizer.json"));
    if (pooling) writeFileSync(join(dir, "1_Pooling/config.json"), JSON.stringify({ [pooling]: true }));
    return { dir, table };
  }

  const expected = (table: Float32Array, ids: number[], mode: "mean" | "max") => {
    const v = Float32Array.from({ length: DIMS }, (_, d) => {
      const col = ids.map((id) => table[id * DIMS + d] as number);
      return mode === "mean" ? col.reduce((s, x) => s + x, 0) / col.length : Math.max(...col);
    });
    const norm = Math.hypot(...v);
    return v.map((x) => x / norm);
  };

  it.each<[string, boolean, string | undefined, "mean" | "max"]>([
    ["token_embeddings, mean pooling (no pooling config)", false, undefined, "mean"],
    ["token_embeddings, max pooling", false, "pooling_mode_max_tokens", "max"],
    // The graph pools (by mean) itself: its sentence_embedding is taken, the CLS config unused.
    ["a ready sentence_embedding", true, "pooling_mode_cls_token", "mean"],
  ])("embeds from %s like the reference ids pooled", async (name, pooled, pooling, mode) => {
    const { dir, table } = modelFolder(name.replace(/\W+/g, "-"), pooled, pooling);
    const model = await EmbeddingModel.load({ ...locateModelFiles(dir), batchSize: 8, threads: 1 });
    try {
      expect(model.dimensions).toBe(DIMS);
      const ids = pythonIds(tokenizerJson, 512, TEXTS);
      // One text per run: the graph's own mean (sentence_embedding) does not mask padding.
      for (const [i, text] of TEXTS.entries()) {
        const { vectors } = await model.embed([text]);
        expect(maxDiff(vectors[0] as Float32Array, expected(table, ids[i] as number[], mode)), text).toBeLessThan(1e-5);
      }
    } finally {
      await model.release();
    }
  });

  it("lowercases the text first when sentence_bert_config.json says do_lower_case (as sentence-transformers does)", async () => {
    const { dir, table } = modelFolder("lowercase", false);
    writeFileSync(join(dir, "sentence_bert_config.json"), JSON.stringify({ do_lower_case: true }));
    const model = await EmbeddingModel.load({ ...locateModelFiles(dir), batchSize: 8, threads: 1 });
    try {
      // The tokenizer keeps case ("Hello" and "hello" are different ids): the vectors must be
      // those of the lowercased texts' ids.
      const lower = pythonIds(
        tokenizerJson,
        512,
        TEXTS.map((t) => t.toLowerCase()),
      );
      expect(lower[2]).not.toEqual(pythonIds(tokenizerJson, 512, [TEXTS[2] as string])[0]);
      for (const [i, text] of TEXTS.entries()) {
        const { vectors } = await model.embed([text]);
        expect(maxDiff(vectors[0] as Float32Array, expected(table, lower[i] as number[], "mean")), text).toBeLessThan(
          1e-5,
        );
      }
    } finally {
      await model.release();
    }
  });
});
