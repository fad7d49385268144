import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { threadId } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSearchConfig } from "../config.ts";
import { loadLocalEmbedder } from "./factory.ts";
import { LocalEmbedder } from "./local.ts";
import { locateModelFiles, ModelFilesError } from "./model-files.ts";
import { CachedEmbedder, type Embedder } from "./provider.ts";

const passage = (i: number) =>
  `Chunk ${i}: ${"the railway network carries freight at night and connects the capital. ".repeat(1 + (i % 5))}`;

describe("LocalEmbedder", () => {
  let embedder: LocalEmbedder;
  beforeAll(async () => {
    embedder = await LocalEmbedder.load({ ...locateModelFiles(), threads: 1 });
  });
  afterAll(() => embedder.close());

  it("runs the model in worker threads, not the caller's; the documents worker only once documents come", async () => {
    expect(embedder.dimensions).toBe(384);
    expect(embedder.queriesThreadId).not.toBe(threadId);
    expect(embedder.documents.running).toBe(false);
    expect(await embedder.embedDocuments(["a document"])).toHaveLength(1);
    expect(embedder.documents.running).toBe(true);
    const documents = await embedder.documents.start();
    expect(documents.threadId).not.toBe(threadId);
    expect(documents.threadId).not.toBe(embedder.queriesThreadId);
  });

  it("closes the documents worker when no documents came for documentsIdleMs, and starts it again", async () => {
    const quick = await LocalEmbedder.load({ ...locateModelFiles(), threads: 1, documentsIdleMs: 200 });
    try {
      const [before] = await quick.embedDocuments(["the night train"]);
      await new Promise((r) => setTimeout(r, 600));
      expect(quick.documents.running).toBe(false);
      const [after] = await quick.embedDocuments(["the night train"]);
      expect(quick.documents.starts).toBe(2);
      expect(Array.from(after as Float32Array)).toEqual(Array.from(before as Float32Array));
    } finally {
      await quick.close();
    }
  });

  it("answers a query and serves timers while a large document batch is in flight", async () => {
    let documentsDone = false;
    const documents = embedder.embedDocuments(Array.from({ length: 256 }, (_, i) => passage(i))).finally(() => {
      documentsDone = true;
    });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const [query] = await embedder.embed(["when do the night trains run?"]);
    // The query had its own worker: it did not wait for the 256 chunks (8 model runs) ahead of it.
    expect(documentsDone).toBe(false);
    expect(query).toHaveLength(384);
    await new Promise((r) => setTimeout(r, 20));
    expect(documentsDone).toBe(false);
    expect(ticks).toBeGreaterThan(0);
    clearInterval(timer);
    expect(await documents).toHaveLength(256);
  });

  it("gives the same vectors on both lanes, in the texts' order", async () => {
    const texts = [passage(4), "short", passage(0), passage(2)];
    const [a, b] = await Promise.all([embedder.embed(texts), embedder.embedDocuments(texts)]);
    a.forEach((v, i) => {
      const w = b[i] as Float32Array;
      expect(Math.max(...v.map((x, d) => Math.abs(x - (w[d] as number))))).toBeLessThan(1e-5);
    });
    // Order: each text's vector is closest to itself among the others.
    const dot = (x: Float32Array, y: Float32Array) => x.reduce((s, v, d) => s + v * (y[d] as number), 0);
    const [again] = await embedder.embed(["short"]);
    expect(dot(again as Float32Array, a[1] as Float32Array)).toBeCloseTo(1, 5);
  });

  it("fails to load with the reason when the model file is not a model, without hanging", async () => {
    const files = locateModelFiles();
    await expect(LocalEmbedder.load({ ...files, onnx: files.tokenizerJson })).rejects.toThrow(
      /embedding worker \(\w+\) could not load the model/,
    );
  });

  describe("the local embedder's model folder (CAPSTAN_EMBEDDING_MODEL_DIR)", () => {
    const files = locateModelFiles();
    const dir = mkdtempSync(join(tmpdir(), "capstan-model-dir-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const load = () => loadLocalEmbedder(loadSearchConfig({ CAPSTAN_EMBEDDING_MODEL_DIR: dir }));

    it("refuses a folder without tokenizer.json, or with a malformed config, naming the file", async () => {
      symlinkSync(files.onnx, join(dir, "model.onnx"));
      await expect(load()).rejects.toThrow(new ModelFilesError(`embedding model file missing: ${dir}/tokenizer.json`));
      symlinkSync(files.tokenizerJson, join(dir, "tokenizer.json"));
      writeFileSync(join(dir, "sentence_bert_config.json"), '{"max_seq_length": 0}');
      await expect(load()).rejects.toThrow(ModelFilesError);
      await expect(load()).rejects.toThrow(/sentence_bert_config\.json is malformed/);
    });

    it("loads a folder of model.onnx and tokenizer.json alone, with the default model's vectors", async () => {
      rmSync(join(dir, "sentence_bert_config.json"));
      const mounted = await load();
      try {
        const text = "Grüße aus München, the railway network carries freight at night.";
        const [[a], [b]] = await Promise.all([mounted.embed([text]), embedder.embed([text])]);
        // Mean pooling (no pooling config), 128 tokens at most (tokenizer.json): the same vector for a short text.
        expect(
          Math.max(...(a as Float32Array).map((x, d) => Math.abs(x - ((b as Float32Array)[d] as number)))),
        ).toBeLessThan(1e-6);
      } finally {
        await mounted.close();
      }
    });
  });
});

describe("CachedEmbedder", () => {
  it("sends documents to the inner embedder's documents path when it has one", async () => {
    const calls: string[] = [];
    const answer = (path: string) => async (texts: string[]) => {
      calls.push(`${path}:${texts.length}`);
      return texts.map(() => new Float32Array([1]));
    };
    const inner: Embedder = {
      name: "stand-in",
      dimensions: 1,
      embed: answer("query"),
      embedDocuments: answer("documents"),
      close: async () => {},
    };
    const cached = new CachedEmbedder(inner, 8);
    await cached.embedUncached(["a", "b"]);
    await cached.embed(["q"]);
    expect(calls).toEqual(["documents:2", "query:1"]);
  });
});
