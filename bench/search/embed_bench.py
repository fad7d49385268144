"""The reference arm of bench/search/embed-bench.ts: the same ONNX model on onnxruntime's own
Python runtime with HuggingFace `tokenizers`, embedding the way sentence-transformers does
(sort by length, batches padded to their own longest text, mean pooling over the attention mask,
L2 normalisation). A small line protocol on stdin/stdout so the Node bench can alternate arms in
one run without reloading: `corpus` (embed the corpus file's texts, answer the seconds), `query I`
(embed query I alone, answer the seconds), `vectors N` (answer the first N corpus vectors).

  python embed_bench.py --model model.onnx --tokenizer tokenizer.json --corpus corpus.json \
                        --threads 1 [--batch 32] [--max-tokens 256]
"""

import argparse
import json
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=256)
    a = p.parse_args()

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = a.threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(a.model, opts, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}

    tok = Tokenizer.from_file(a.tokenizer)
    tok.enable_truncation(max_length=a.max_tokens)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest text of each batch
    with open(a.corpus, encoding="utf8") as f:
        corpus = json.load(f)

    def run(texts: list[str]) -> np.ndarray:
        enc = tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def embed(texts: list[str]) -> np.ndarray:
        # sentence-transformers' encode(): longest first, batches, original order restored.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), session.get_outputs()[0].shape[-1]), dtype=np.float32)
        for s in range(0, len(order), a.batch):
            idx = order[s : s + a.batch]
            out[idx] = run([texts[i] for i in idx])
        return out

    print(json.dumps({"ready": True, "ort": ort.__version__}), flush=True)
    for line in sys.stdin:
        cmd, *rest = line.split()
        if cmd == "corpus":
            t0 = time.perf_counter()
            out = embed(corpus["texts"])
            # The count of vectors made, which the benchmark checks against the corpus.
            print(json.dumps({"seconds": time.perf_counter() - t0, "count": int(out.shape[0])}), flush=True)
        elif cmd == "query":
            t0 = time.perf_counter()
            embed([corpus["queries"][int(rest[0])]])
            print(json.dumps({"seconds": time.perf_counter() - t0}), flush=True)
        elif cmd == "vectors":
            v = embed(corpus["texts"][: int(rest[0])])
            print(json.dumps({"vectors": v.tolist()}), flush=True)
        elif cmd == "quit":
            break


if __name__ == "__main__":
    main()
