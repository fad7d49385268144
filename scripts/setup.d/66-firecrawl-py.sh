# Firecrawl's official Python SDK (issue 26: the scraper's /v1 and /v2 routes are checked with the
# SDKs users point at it), pinned, in its own virtual environment under the cache (never
# system-wide, never in git). test/scraper/firecrawl-sdk.test.ts runs
# $CAPSTAN_CACHE/firecrawl-py/<version>/bin/python against a scraper on loopback. Idempotent: a
# venv that already imports the pinned version is kept.
set -euo pipefail
. "$(dirname "$0")/../lib/apt.sh"
version=4.55.0
cache="${CAPSTAN_CACHE:-$HOME/.cache/capstan}"
venv="$cache/firecrawl-py/$version"
if "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('firecrawl-py') != '$version')" 2>/dev/null; then
  echo "reused: $venv"
  exit 0
fi
if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
  apt_install_missing python3-venv
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "firecrawl-py==$version"
echo "[setup] firecrawl-py $version in $venv"
