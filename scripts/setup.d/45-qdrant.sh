# Knowledge search on Qdrant: the vendored Qdrant server (../shared/vendor/qdrant, beside the
# repository) installed into the binary cache, keyed by version, like the Kubernetes binaries.
# The test ground starts one server per test run from here (test/ground/qdrant.ts). install.sh
# checks the archive against SHA256SUMS; when it refuses (missing or corrupt), build.sh rebuilds
# the server from the vendored sources (25-45 min on two cores, needs Rust >= 1.94).
qdrant_version=1.18.3
qdrant_vendor=${QDRANT_VENDOR_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/../shared/vendor/qdrant}
qdrant_dir=${CAPSTAN_CACHE:-$HOME/.cache/capstan}/qdrant/$qdrant_version
if ! "$qdrant_dir/qdrant" --version 2>/dev/null | grep -q "$qdrant_version"; then
  if ! bash "$qdrant_vendor/install.sh" "$qdrant_dir"; then
    echo "[setup] qdrant: prebuilt binary refused; rebuilding from source (25-45 min)" >&2
    nice -n 10 bash "$qdrant_vendor/build.sh" "$qdrant_dir"
  fi
fi
"$qdrant_dir/qdrant" --version
