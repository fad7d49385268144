# Knowledge search on Qdrant: the vendored Qdrant server (../shared/vendor/qdrant, beside the
# repository) installed into the binary cache, keyed by version, like the Kubernetes binaries.
# The test ground starts one server per test run from here (test/ground/qdrant.ts). install.sh
# checks the archive against SHA256SUMS; when it refuses (missing or corrupt), build.sh rebuilds
# the server from the vendored sources (25-45 min on two cores, needs Rust >= 1.94).
qdrant_version=1.18.3
# The vendored folder sits beside the checkout (../shared/vendor/qdrant). A clone made elsewhere
# (CI clones the repository into a fresh folder) finds it beside the checkout it was cloned from,
# when that origin is a local path. QDRANT_VENDOR_DIR overrides both.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
qdrant_vendor=${QDRANT_VENDOR_DIR:-}
if [ -z "$qdrant_vendor" ]; then
  candidates=("$repo/../shared/vendor/qdrant")
  origin=$(git -C "$repo" config --get remote.origin.url 2>/dev/null || true)
  origin=${origin#file://}
  [ -n "$origin" ] && [ -d "$origin" ] && candidates+=("$origin/../shared/vendor/qdrant")
  for c in "${candidates[@]}"; do
    if [ -f "$c/install.sh" ]; then qdrant_vendor=$(cd "$c" && pwd); break; fi
  done
  : "${qdrant_vendor:=${candidates[0]}}"
fi
qdrant_dir=${CAPSTAN_CACHE:-$HOME/.cache/capstan}/qdrant/$qdrant_version
# One install at a time: the image build (scripts/images/build.sh) runs this too, beside setup.
mkdir -p "$(dirname "$qdrant_dir")"
exec 8>"$qdrant_dir.lock"
flock 8
if ! "$qdrant_dir/qdrant" --version 2>/dev/null | grep -q "$qdrant_version"; then
  if [ ! -f "$qdrant_vendor/install.sh" ]; then
    echo "[setup] qdrant: no vendored Qdrant at $qdrant_vendor (set QDRANT_VENDOR_DIR to the folder holding install.sh)" >&2
    exit 1
  fi
  if ! bash "$qdrant_vendor/install.sh" "$qdrant_dir"; then
    echo "[setup] qdrant: prebuilt binary refused; rebuilding from source (25-45 min)" >&2
    nice -n 10 bash "$qdrant_vendor/build.sh" "$qdrant_dir"
  fi
fi
"$qdrant_dir/qdrant" --version >&2
# The last line is the binary's path (scripts/images/build.sh reads it).
echo "$qdrant_dir/qdrant"
