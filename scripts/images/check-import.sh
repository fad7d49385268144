#!/usr/bin/env bash
# Checks that containerd imports the archives build.sh wrote, as the cluster does
# (`ctr -n k8s.io images import`), in a throwaway containerd: its own root, state and socket
# under a temporary folder, stopped and removed at the end.
#
#   scripts/images/check-import.sh BIN_DIR [IMAGES_DIR]
#
# BIN_DIR holds containerd and ctr (e.g. the test cluster's build); IMAGES_DIR defaults to the
# folder named in ~/.cache/capstan/images/current.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/images/lib.sh

bin=${1:?usage: check-import.sh BIN_DIR [IMAGES_DIR]}
dir=${2:-$(cat "$capstan_cache/images/current")}
work=$(mktemp -d)
pid=
stop() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap stop EXIT

# Only the image store: the CRI plugins would look for CNI and cgroups this check does not need.
cat >"$work/config.toml" <<EOF
version = 3
root = "$work/root"
state = "$work/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images"]
[grpc]
  address = "$work/containerd.sock"
EOF
"$bin/containerd" --config "$work/config.toml" >"$work/containerd.log" 2>&1 &
pid=$!
ctr() { "$bin/ctr" --address "$work/containerd.sock" -n k8s.io "$@"; }
for _ in $(seq 1 50); do ctr version >/dev/null 2>&1 && break; sleep 0.2; done
ctr version >/dev/null || { cat "$work/containerd.log" >&2; exit 1; }

source "$dir/tags.env"
for tar in "$dir"/*.tar; do
  name=$(basename "$tar" .tar)
  want_var="$(echo "$name" | tr a-z A-Z)_IMAGE"
  want=${!want_var}
  ctr images import "$tar" >/dev/null
  # containerd names the image after the archive's tag, normalised to a full reference.
  ctr images ls -q | grep -qx "$want" || { echo "[import] $name: $want not found after import" >&2; exit 1; }
  ctr images check "name==$want" | grep -q complete || { echo "[import] $name: content incomplete" >&2; exit 1; }
  echo "[import] $name: $want imported and complete"
done
