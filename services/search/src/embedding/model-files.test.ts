import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { maxDiff } from "./fixtures/max-diff.ts";
import { locateModelFiles, ModelFilesError, type Pooling, readModelConfig } from "./model-files.ts";
import { EmbeddingModel } from "./model-runner.ts";

// all-MiniLM-L6-v2's vectors with each pooling mode, on onnxruntime's Python runtime
// (bench/search/reference_pooling.py wrote them).
const REFERENCE = JSON.parse(readFileSync(new URL("./fixtures/reference-pooling.json", import.meta.url), "utf8")) as {
  texts: string[];
  vectors: Record<Pooling, number[][]>;
};

const DEFAULT = locateModelFiles();
const root = mkdtempSync(join(tmpdir(), "capstan-model-folders-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let folders = 0;

/** A model folder of the default model's files (linked), plus the given files (object → JSON). */
function folder(files: Record<string, string | object>, onnxAt: string | null = "onnx/model.onnx"): string {
  const dir = join(root, String(folders++));
  mkdirSync(dir);
  const put = (path: string, write: (file: string) => void) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    write(join(dir, path));
  };
  if (onnxAt) put(onnxAt, (f) => symlinkSync(DEFAULT.onnx, f));
  for (const [path, content] of Object.entries({ "tokenizer.json": "@link", ...files })) {
    if (content === "@link") put(path, (f) => symlinkSync(join(DEFAULT.dir, path), f));
    else put(path, (f) => writeFileSync(f, typeof content === "string" ? content : JSON.stringify(content)));
  }
  return dir;
}

const MODULES = [
  { idx: 0, name: "0", path: "", type: "sentence_transformers.models.Transformer" },
  { idx: 1, name: "1", path: "1_Pooling", type: "sentence_transformers.models.Pooling" },
  { idx: 2, name: "2", path: "2_Normalize", type: "sentence_transformers.models.Normalize" },
];
const poolingConfig = (mode: Pooling) => ({
  word_embedding_dimension: 384,
  pooling_mode_cls_token: mode === "cls",
  pooling_mode_mean_tokens: mode === "mean",
  pooling_mode_max_tokens: mode === "max",
  pooling_mode_mean_sqrt_len_tokens: mode === "mean_sqrt_len",
  pooling_mode_lasttoken: mode === "lasttoken",
});

describe("readModelConfig", () => {
  it("reads the default model's folder: mean pooling, Normalize, 256 tokens", () => {
    const config = readModelConfig(DEFAULT);
    expect(config).toMatchObject({ pooling: "mean", normalize: true, maxSeqLength: 256, lowercase: false });
  });

  it("reads do_lower_case from sentence_bert_config.json (false when absent)", () => {
    const lower = folder({ "sentence_bert_config.json": { max_seq_length: 512, do_lower_case: true } });
    expect(readModelConfig(locateModelFiles(lower))).toMatchObject({ lowercase: true, maxSeqLength: 512 });
    expect(readModelConfig(locateModelFiles(folder({})))).toMatchObject({ lowercase: false });
  });

  it("follows modules.json to the Pooling module's folder, wherever it is", () => {
    const dir = folder({
      "modules.json": [MODULES[0], { ...MODULES[1], path: "pool" }],
      "pool/config.json": poolingConfig("cls"),
    });
    expect(readModelConfig(locateModelFiles(dir))).toMatchObject({ pooling: "cls", normalize: false });
  });

  it("without modules.json: 1_Pooling when present, else mean; the tokenizer file's truncation length", () => {
    expect(readModelConfig(locateModelFiles(folder({ "1_Pooling/config.json": poolingConfig("max") })))).toMatchObject({
      pooling: "max",
      normalize: false,
      maxSeqLength: 128, // all-MiniLM-L6-v2's tokenizer.json says 128; its sentence_bert_config.json says 256
    });
    expect(readModelConfig(locateModelFiles(folder({})))).toMatchObject({ pooling: "mean" });
  });

  it.each<[string, Record<string, string | object>, RegExp]>([
    [
      "a Pooling folder modules.json names but lacks",
      { "modules.json": MODULES },
      /missing: .*1_Pooling\/config\.json/,
    ],
    [
      "a file that is not JSON",
      { "sentence_bert_config.json": "{max_seq" },
      /sentence_bert_config\.json is not valid JSON/,
    ],
    [
      "a wrong type",
      { "sentence_bert_config.json": { max_seq_length: "long" } },
      /sentence_bert_config\.json is malformed/,
    ],
    [
      "two pooling modes",
      { "1_Pooling/config.json": { pooling_mode_cls_token: true, pooling_mode_mean_tokens: true } },
      /exactly one pooling mode must be on \(found cls, mean\)/,
    ],
    [
      "weighted-mean pooling",
      { "1_Pooling/config.json": { pooling_mode_weightedmean_tokens: true } },
      /weighted-mean pooling is not supported/,
    ],
    ["a tokenizer.json without a model", { "tokenizer.json": { version: "1.0" } }, /tokenizer\.json is malformed/],
  ])("refuses %s with a ModelFilesError naming the file", (_, files, message) => {
    const files_ = locateModelFiles(folder(files));
    expect(() => readModelConfig(files_)).toThrow(ModelFilesError);
    expect(() => readModelConfig(files_)).toThrow(message);
  });
});

describe("locateModelFiles with a folder", () => {
  it("takes onnx/model.onnx, else model.onnx", () => {
    expect(locateModelFiles(folder({})).onnx).toMatch(/\/onnx\/model\.onnx$/);
    const flat = folder({}, "model.onnx");
    expect(locateModelFiles(flat).onnx).toBe(join(flat, "model.onnx"));
  });

  it("names the missing file", () => {
    const noModel = folder({}, null);
    expect(() => locateModelFiles(noModel)).toThrow(
      `embedding model file missing: ${noModel}/onnx/model.onnx (or model.onnx)`,
    );
    const noTokenizer = folder({ "tokenizer.json": "x" });
    rmSync(join(noTokenizer, "tokenizer.json"));
    expect(() => locateModelFiles(noTokenizer)).toThrow(`embedding model file missing: ${noTokenizer}/tokenizer.json`);
    expect(() => locateModelFiles(join(root, "absent"))).toThrow(ModelFilesError);
  });
});

describe("EmbeddingModel on model folders", () => {
  it.each<Pooling>(["mean", "cls", "max", "mean_sqrt_len", "lasttoken"])(
    "pools by %s as the folder's 1_Pooling/config.json says, like the Python reference",
    async (mode) => {
      const dir = folder({ "modules.json": MODULES, "1_Pooling/config.json": poolingConfig(mode) });
      const model = await EmbeddingModel.load({ ...locateModelFiles(dir), batchSize: 4, threads: 1 });
      try {
        const { vectors } = await model.embed(REFERENCE.texts);
        REFERENCE.vectors[mode].forEach((ref, i) => {
          expect(maxDiff(vectors[i] as Float32Array, ref), REFERENCE.texts[i]).toBeLessThan(1e-5);
        });
      } finally {
        await model.release();
      }
    },
  );

  it("truncates at the folder's max_seq_length", async () => {
    const dir = folder({ "sentence_bert_config.json": { max_seq_length: 4 } });
    const short = await EmbeddingModel.load({ ...locateModelFiles(dir), batchSize: 4, threads: 1 });
    const full = await EmbeddingModel.load({ ...DEFAULT, batchSize: 4, threads: 1 });
    try {
      // [CLS] how do [SEP]: the first two word pieces of the longer text, and nothing after.
      const [cut] = (await short.embed(["How do I rotate the API key?"])).vectors;
      const [prefix, whole] = (await full.embed(["How do", "How do I rotate the API key?"])).vectors;
      expect(maxDiff(cut as Float32Array, prefix as Float32Array)).toBeLessThan(1e-6);
      expect(maxDiff(cut as Float32Array, whole as Float32Array)).toBeGreaterThan(1e-2);
    } finally {
      await Promise.all([short.release(), full.release()]);
    }
  });
});
