import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { locateModelFiles } from "./model-files.ts";
import { EmbeddingModel, lengthBatches } from "./model-runner.ts";

// Vectors of the same model file on onnxruntime's Python runtime with HuggingFace tokenizers,
// one text per run (bench/search/reference_vectors.py wrote them).
const REFERENCE = JSON.parse(readFileSync(new URL("./fixtures/reference-vectors.json", import.meta.url), "utf8")) as {
  texts: string[];
  vectors: number[][];
};

function maxDiff(a: Float32Array, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}

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
