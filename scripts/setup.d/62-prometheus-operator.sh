#!/usr/bin/env bash
# Monitoring on the e2e node (test/e2e/monitoring.test.ts): the Prometheus Operator runs as a host
# process with the cluster's admin kubeconfig and makes a Prometheus pod from the chart's
# ServiceMonitors, PodMonitor and PrometheusRule, as on a real cluster. No image registry is
# reachable, so the pod's two images are made here as one-layer archives
# (test/scripts/image-archive.sh), which the e2e global setup imports into the node:
#   - Prometheus 3.5, built from the Go module proxy with Kubernetes service discovery (Debian's
#     2.42, which the integration tests run, is built without it);
#   - prometheus-config-reloader (the pod's init and sidecar container), built from the operator's
#     module.
# The operator binary and the CRDs (copied from the module's example/prometheus-operator-crd) land
# in ~/.cache/capstan/prometheus-operator/<version>/, Prometheus in prometheus-<version>-<hash>/,
# the images in images/; `current` holds KEY=path lines read by
# test/e2e/support/monitoring-build.ts. Prints each build's time and the whole. Idempotent: a cached binary that reports its version,
# and an archive already made, are reused. The operator's version is pinned by
# test/kube-bin/prometheus-operator/go.mod (v0.85.0, the release the Go module proxy serves; its
# go 1.24 module builds with the machine's Go 1.26).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$repo/test"
export PATH="/usr/local/go/bin:$PATH"
# shellcheck source=../../test/scripts/go-build.sh
source "$here/scripts/go-build.sh"
# shellcheck source=../../test/scripts/image-archive.sh
source "$here/scripts/image-archive.sh"
renice -n 10 $$ >/dev/null

module=github.com/prometheus-operator/prometheus-operator
cache=${CAPSTAN_CACHE:-$HOME/.cache/capstan}
root="$cache/prometheus-operator"
start=$SECONDS
mkdir -p "$root"
exec 8>"$root/build.lock"
flock 8

# Built from test/kube-bin/prometheus-operator, a module that requires the operator (its go.sum
# pins every dependency), as the node's Kubernetes binaries are from test/kube-bin/node: the
# operator's own module cannot be built in place (tools.go says why). The CRDs come from the
# module's source as downloaded.
mod="$here/kube-bin/prometheus-operator"
operator_version=$(awk -v m="$module" '$1 == "require" && $2 == m {print $3}' "$mod/go.mod")
: "${operator_version:?no $module require line in test/kube-bin/prometheus-operator/go.mod}"
out="$root/$operator_version"
mkdir -p "$out"
src=$(cd "$mod" && go mod download -json "$module@$operator_version" | awk -F'"' '/"Dir"/ {print $4}')
: "${src:?go mod download returned no module directory}"
stamp="-X github.com/prometheus/common/version.Version=${operator_version#v} -X github.com/prometheus/common/version.Branch=release"
# shellcheck disable=SC2086 # $stamp is several ldflags words
build operator "$mod" "$module/cmd/operator" "$out" --short-version "${operator_version#v}" $stamp
# shellcheck disable=SC2086
build prometheus-config-reloader "$mod" "$module/cmd/prometheus-config-reloader" "$out" --version "version ${operator_version#v}" $stamp

rm -rf "$out/crds.tmp"
cp -r "$src/example/prometheus-operator-crd" "$out/crds.tmp"
chmod -R u+w "$out/crds.tmp"
rm -rf "$out/crds"
mv "$out/crds.tmp" "$out/crds"

images="$root/images"
reloader_ref=localhost/capstan/prometheus-config-reloader:$operator_version
reloader_archive="$images/prometheus-config-reloader-$operator_version.tar"
if [ ! -s "$reloader_archive" ] || [ "$out/prometheus-config-reloader" -nt "$reloader_archive" ]; then
  rootfs=$(mktemp -d)
  mkdir -p "$rootfs/bin"
  cp "$out/prometheus-config-reloader" "$rootfs/bin/"
  image_archive "$reloader_ref" "$rootfs" "$reloader_archive" '[]' '["/bin/prometheus-config-reloader"]'
  rm -rf "$rootfs"
fi
echo "prometheus-config-reloader image: $reloader_archive ($reloader_ref)"

# Prometheus itself, built from the Go module proxy: Debian's build leaves Kubernetes service
# discovery out (its configuration fails with "field kubernetes_sd_configs not found"), and the
# operator configures nothing else. Module v0.305.0 is Prometheus 3.5.0, in the operator's
# compatibility list. Built as its own main module (its go.mod and go.sum apply, as upstream) from
# a copy of the downloaded source in which test/kube-bin/prometheus/plugins.go.in replaces the
# list of service discoveries with Kubernetes alone, so the cloud providers' SDKs are not built
# (the module cache is read-only, and go build -overlay refuses files in it). The web UI's assets
# are not built in: the tests read the HTTP API.
prom_module_version=v0.305.0
pmod="$here/kube-bin/prometheus"
# v0.MMP.N is Prometheus 3.M.N (MMP = 300 + minor).
minor=${prom_module_version#v0.}; patch=${minor#*.}; minor=$((${minor%%.*} - 300))
prom_version=v3.$minor.$patch
# Keyed by the plugin list too (the binary reports only the version).
prom_build=$prom_version-$(sha256sum "$pmod/plugins.go.in" | cut -c1-12)
prom_out="$root/prometheus-$prom_build"
mkdir -p "$prom_out"
prom_reported=""
[ -x "$prom_out/prometheus" ] && prom_reported=$("$prom_out/prometheus" --version 2>&1 || true)
if [[ $prom_reported != *"version ${prom_version#v}"* ]]; then
  prom_src=$(cd /tmp && go mod download -json "github.com/prometheus/prometheus@$prom_module_version" | awk -F'"' '/"Dir"/ {print $4}')
  : "${prom_src:?go mod download returned no directory for github.com/prometheus/prometheus}"
  rm -rf "$prom_out/src"
  cp -r "$prom_src" "$prom_out/src"
  chmod -R u+w "$prom_out/src"
  cp "$pmod/plugins.go.in" "$prom_out/src/plugins/plugins.go"
fi
build prometheus "$prom_out/src" ./cmd/prometheus "$prom_out" --version "version ${prom_version#v}" \
  "-X github.com/prometheus/common/version.Version=${prom_version#v} -X github.com/prometheus/common/version.Branch=release"
rm -rf "$prom_out/src"

prom_ref=localhost/capstan/prometheus:$prom_build
prom_archive="$images/prometheus-$prom_build.tar"
if [ ! -s "$prom_archive" ] || [ "$prom_out/prometheus" -nt "$prom_archive" ]; then
  rootfs=$(mktemp -d)
  mkdir -p "$rootfs/bin" "$rootfs/prometheus" "$rootfs/etc/prometheus"
  cp "$prom_out/prometheus" "$rootfs/bin/prometheus"
  image_archive "$prom_ref" "$rootfs" "$prom_archive" '[]' '["/bin/prometheus"]'
  rm -rf "$rootfs"
fi
echo "prometheus image: $prom_archive ($prom_ref)"

cat >"$root/current.tmp" <<VARS
OPERATOR_VERSION=$operator_version
OPERATOR=$out/operator
CRDS=$out/crds
CONFIG_RELOADER_IMAGE=$reloader_ref
CONFIG_RELOADER_ARCHIVE=$reloader_archive
PROMETHEUS_VERSION=$prom_version
PROMETHEUS_IMAGE=$prom_ref
PROMETHEUS_ARCHIVE=$prom_archive
VARS
mv "$root/current.tmp" "$root/current"
echo "prometheus-operator: ready in $((SECONDS - start)) s ($root/current)"
