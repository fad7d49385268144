# API fuzzing (issue 16): schemathesis (PyPI) and openapi-spec-validator, pinned, in their own virtual
# environment under the cache (never system-wide, never in git). test/fuzz/ runs
# $CAPSTAN_CACHE/schemathesis/<version>/bin/st against each service's published /openapi.json on
# loopback, and openapi-spec-validator on the document itself. Idempotent: a venv whose `st`
# already reports the pinned version is kept.
set -euo pipefail
. "$(dirname "$0")/../lib/apt.sh"
version=4.32.5
validator_version=0.9.0
cache="${CAPSTAN_CACHE:-$HOME/.cache/capstan}"
venv="$cache/schemathesis/$version"
if "$venv/bin/st" --version 2>/dev/null | grep -q "$version" &&
  "$venv/bin/python" -c "import openapi_spec_validator" 2>/dev/null; then
  echo "reused: $venv"
  exit 0
fi
# schemathesis 4 needs Python 3.11 or later (Debian 12 ships 3.11).
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "[setup] schemathesis: needs python3 >= 3.11, found $(python3 --version 2>&1)" >&2
  exit 1
fi
# Debian splits venv/ensurepip out of python3 itself.
if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
  apt_install_missing python3-venv
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check \
  "schemathesis==$version" "openapi-spec-validator==$validator_version"
if ! "$venv/bin/st" --version | grep -q "$version"; then
  echo "[setup] schemathesis: $venv/bin/st does not report $version" >&2
  exit 1
fi
echo "[setup] schemathesis $version in $venv"
