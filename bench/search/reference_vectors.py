# Writes services/search/src/embedding/fixtures/reference-vectors.json: the model's vectors for a few texts
# on onnxruntime's Python runtime (one text per run, so no padding at all), which
# model-runner.test.ts compares Capstan's embedder against. Run with the venv of embed-bench.ts:
#   ~/.cache/capstan/embed-bench/venv-*/bin/python bench/search/reference_vectors.py MODEL.onnx TOKENIZER.json OUT.json
import json, sys
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer
model, tokjson, out = sys.argv[1:4]
texts = [
    "How do I rotate the API key?",
    "Hello, World!",
    "Café naïve résumé — déjà vu; 中文 text 123.45 and e-mail: bob@example.com",
    "In the billing system, the invoices are reconciled nightly. In the billing system, the refunds need manager approval. Note 7: tax rates and credit notes are reviewed together.",
    " ".join(["The railway network carries freight at night and connects the capital."] * 40),
    "x",
]
o = ort.SessionOptions(); o.intra_op_num_threads = 1
s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
tok = Tokenizer.from_file(tokjson); tok.enable_truncation(max_length=256); tok.no_padding()
vecs = []
for t in texts:  # one at a time: no padding at all, the plainest reference
    e = tok.encode(t)
    ids = np.array([e.ids], dtype=np.int64)
    h = s.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})[0][0]
    v = h.mean(axis=0); v = v / np.linalg.norm(v)
    vecs.append([float(f"{x:.7g}") for x in v])
json.dump({"producer": f"onnxruntime {ort.__version__} (Python), tokenizers, one text per run, mean pooling, L2", "maxTokens": 256, "texts": texts, "vectors": vecs}, open(out, "w"))
print(len(open(out).read()))
