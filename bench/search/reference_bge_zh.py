# Writes test/search/fixtures/bge-small-zh-reference.json: bge-small-zh-v1.5's vectors for a few
# Chinese, mixed Chinese/English and cased texts, computed as sentence-transformers would from the
# folder scripts/setup.d/43-second-model.sh assembles, on onnxruntime's Python runtime and
# HuggingFace tokenizers, one text per run: the text lowercased when sentence_bert_config.json says
# do_lower_case, truncated at its max_seq_length, the pooling 1_Pooling/config.json names (CLS),
# L2-normalised. test/search/second-model-folder.test.ts compares Capstan's embedder against them.
# Run with the venv of embed-bench.ts:
#   ~/.cache/capstan/embed-bench/venv-*/bin/python bench/search/reference_bge_zh.py \
#     ~/.cache/capstan/models/bge-small-zh-v1.5 test/search/fixtures/bge-small-zh-reference.json
# then `npx biome format --write` the file (the linter checks its layout).
import json, os, sys
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer
folder, out = sys.argv[1:3]
texts = [
    "北京是中华人民共和国的首都，也是全国的政治和文化中心。",
    "如何轮换 API 密钥？",
    "Kubernetes 集群中的 Pod 无法启动时，请先查看事件日志。",
    "Hello World, this is Capstan's Search API.",
    "ＡＢＣ全角字符与半角 abc 混排，数字 123.45，emoji 🚄",
    "铁路网络在夜间运输货物并连接首都。" * 40,
    "x",
]
config = json.load(open(os.path.join(folder, "sentence_bert_config.json")))
pooling = json.load(open(os.path.join(folder, "1_Pooling/config.json")))
assert pooling["pooling_mode_cls_token"], "this script pools by CLS only"
o = ort.SessionOptions(); o.intra_op_num_threads = 1
s = ort.InferenceSession(os.path.join(folder, "model.onnx"), o, providers=["CPUExecutionProvider"])
tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
tok.enable_truncation(max_length=config["max_seq_length"]); tok.no_padding()
vectors, lengths = [], []
for t in texts:
    ids = np.array([tok.encode(t.lower() if config.get("do_lower_case") else t).ids], dtype=np.int64)
    h = s.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})[0][0]
    v = h[0] / np.linalg.norm(h[0])
    vectors.append([float(f"{x:.7g}") for x in v]); lengths.append(int(ids.shape[1]))
json.dump({"producer": f"onnxruntime {ort.__version__} (Python), tokenizers, one text per run, CLS, L2",
           "texts": texts, "tokens": lengths, "vectors": vectors}, open(out, "w"), ensure_ascii=False)
