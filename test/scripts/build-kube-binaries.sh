#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the Go module proxy into a cache outside the repository,
# keyed by version. Idempotent: a cached binary that answers --version is reused.
# Prints where the binaries are and how long the build took.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
kube_version=$(awk '/^require k8s.io\/kubernetes/ {print $3}' "$here/kube-bin/apiserver/go.mod")
etcd_version=$(awk '/^require go.etcd.io\/etcd\/server\/v3/ {print $3}' "$here/kube-bin/etcd/go.mod")
cache=${CAPSTAN_CACHE:-$HOME/.cache/capstan}
out="$cache/kube/$kube_version-etcd-$etcd_version"
mkdir -p "$out"

build() { # name module-dir package
  local name=$1 dir=$2 pkg=$3
  if [ -x "$out/$name" ] && "$out/$name" --version >/dev/null 2>&1; then
    echo "$name: cached at $out/$name"
    return
  fi
  local start=$SECONDS
  echo "$name: building $pkg (this takes several minutes on 2 cores the first time)"
  (cd "$dir" && CGO_ENABLED=0 go build -buildvcs=false -trimpath -ldflags '-s -w' -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
  echo "$name: built in $((SECONDS - start)) s -> $out/$name"
}

build etcd "$here/kube-bin/etcd" .
build kube-apiserver "$here/kube-bin/apiserver" k8s.io/kubernetes/cmd/kube-apiserver
echo "$out" > "$cache/kube/current"
echo "KUBE_BIN_DIR=$out"
