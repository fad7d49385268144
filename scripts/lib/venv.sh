# Sourced by setup.d snippets: one pinned PyPI package in a virtual environment of its own under
# the cache (never system-wide, never in git), at <cache>/<name>/<version>.
#   pinned_venv <name> <pypi package> <version>
# Idempotent: a venv whose package is already at that version is kept ("reused: <dir>").
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

pinned_venv() {
  local name=$1 package=$2 version=$3
  local venv="${CAPSTAN_CACHE:-$HOME/.cache/capstan}/$name/$version"
  local check="import importlib.metadata as m, sys; sys.exit(m.version('$package') != '$version')"
  if "$venv/bin/python" -c "$check" 2>/dev/null; then
    echo "reused: $venv"
    return 0
  fi
  if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
    apt_install_missing python3-venv
  fi
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$package==$version"
  "$venv/bin/python" -c "$check"
  echo "[setup] $package $version in $venv"
}
