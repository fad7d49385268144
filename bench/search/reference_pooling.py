# Writes services/search/src/embedding/fixtures/reference-pooling.json: all-MiniLM-L6-v2's vectors
# for a few texts with each pooling mode sentence-transformers' Pooling module offers that Capstan
# runs (mean, cls, max, mean_sqrt_len, lasttoken), on onnxruntime's Python runtime, one text per
# run; model-files.test.ts loads the same ONNX file from folders whose 1_Pooling/config.json asks
# for each mode and compares. Run with the venv of embed-bench.ts:
#   ~/.cache/capstan/embed-bench/venv-*/bin/python bench/search/reference_pooling.py MODEL.onnx TOKENIZER.json OUT.json
import json, sys
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer
model, tokjson, out = sys.argv[1:4]
texts = ["How do I rotate the API key?", "Grüße aus München — Straße und Größe", "x"]
o = ort.SessionOptions(); o.intra_op_num_threads = 1
s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
tok = Tokenizer.from_file(tokjson); tok.enable_truncation(max_length=256); tok.no_padding()
pool = {
    "mean": lambda h: h.mean(axis=0),
    "cls": lambda h: h[0],
    "max": lambda h: h.max(axis=0),
    "mean_sqrt_len": lambda h: h.sum(axis=0) / np.sqrt(len(h)),
    "lasttoken": lambda h: h[-1],
}
vectors = {mode: [] for mode in pool}
for t in texts:
    ids = np.array([tok.encode(t).ids], dtype=np.int64)
    h = s.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})[0][0]
    for mode, f in pool.items():
        v = f(h); v = v / np.linalg.norm(v)
        vectors[mode].append([float(f"{x:.7g}") for x in v])
json.dump({"producer": f"onnxruntime {ort.__version__} (Python), tokenizers, one text per run, L2", "texts": texts, "vectors": vectors}, open(out, "w"))
