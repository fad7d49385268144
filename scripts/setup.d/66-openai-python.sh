# The openai-python SDK (PyPI), pinned, in its own virtual environment under the cache (never
# system-wide, never in git): test/gateway/providers-sdk.test.ts drives the gateway with it
# (completion, stream, tool call) in front of the Azure OpenAI and Anthropic fakes, as the
# openai-node SDK does. Idempotent: a venv that already imports the pinned version is kept.
set -euo pipefail
. "$(dirname "$0")/../lib/apt.sh"
version=3.57.0
cache="${CAPSTAN_CACHE:-$HOME/.cache/capstan}"
venv="$cache/openai-python/$version"
if "$venv/bin/python" -c "import openai, sys; sys.exit(openai.__version__ != '$version')" 2>/dev/null; then
  echo "reused: $venv"
  exit 0
fi
if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
  apt_install_missing python3-venv
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "openai==$version"
"$venv/bin/python" -c "import openai, sys; sys.exit(openai.__version__ != '$version')"
echo "[setup] openai-python $version in $venv"
