#!/usr/bin/env bash
# Builds kube-apiserver, etcd and helm from the Go module proxy into a cache outside the
# repository, keyed by version. Idempotent: a cached binary that answers is reused.
# Prints where the binaries are and how long each build took.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
kube_version=$(awk '/^require k8s.io\/kubernetes/ {print $3}' "$here/kube-bin/apiserver/go.mod")
etcd_version=$(awk '/^require go.etcd.io\/etcd\/server\/v3/ {print $3}' "$here/kube-bin/etcd/go.mod")
helm_version=$(awk '/^require helm.sh\/helm\/v3/ {print $3}' "$here/kube-bin/helm/go.mod")
: "${kube_version:?no k8s.io/kubernetes require line}" "${etcd_version:?no etcd require line}" \
  "${helm_version:?no helm.sh/helm/v3 require line}"
cache=${CAPSTAN_CACHE:-$HOME/.cache/capstan}
out="$cache/kube/$kube_version-etcd-$etcd_version"

# shellcheck source=go-build.sh
source "$here/scripts/go-build.sh"

kube_minor=$(echo "$kube_version" | cut -d. -f2)
kv=k8s.io/component-base/version
build etcd "$here/kube-bin/etcd" . "$out" --version "etcd Version: ${etcd_version#v}"
build kube-apiserver "$here/kube-bin/apiserver" k8s.io/kubernetes/cmd/kube-apiserver "$out" --version \
  "Kubernetes $kube_version" \
  "-X $kv.gitVersion=$kube_version -X $kv.gitMajor=1 -X $kv.gitMinor=$kube_minor -X $kv.gitTreeState=clean"
echo "$out" > "$cache/kube/current"
echo "KUBE_BIN_DIR=$out"
# The chart test (test/operator/chart.test.ts) lints, renders and installs charts/capstan.
build helm "$here/kube-bin/helm" helm.sh/helm/v3/cmd/helm "$cache/helm/$helm_version" version \
  "Version:\"$helm_version\"" "-X helm.sh/helm/v3/internal/version.version=$helm_version"
echo "HELM_BIN=$cache/helm/$helm_version/helm"
