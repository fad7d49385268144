#!/usr/bin/env bash
# The trace receiver of the test ground: an OpenTelemetry Collector with only the OTLP receiver and
# the file exporter (test/kube-bin/otelcol/main.go), built from the Go module proxy into the binary
# cache, keyed by the collector version pinned in its go.mod and a hash of main.go, like the
# Kubernetes binaries. test/ground/trace-receiver.ts starts one per test file that reads traces.
# About 4 minutes of Go build on two cores under load (docs/testing.md), against about 40 for the
# Jaeger all-in-one this replaced.
#
# go.sum pins every module's checksum, so the build needs only the module proxy. To move to another
# release: in test/kube-bin/otelcol, `go get go.opentelemetry.io/collector/otelcol@vX ...` for each
# module main.go imports (GOSUMDB=off where the checksum database is unreachable, as here), then
# build; the cache key changes with go.sum.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$repo/test"
export PATH="/usr/local/go/bin:$PATH"
collector=$(awk '$1 == "go.opentelemetry.io/collector/otelcol" {print $2}' "$here/kube-bin/otelcol/go.mod")
: "${collector:?no go.opentelemetry.io/collector/otelcol require line in test/kube-bin/otelcol/go.mod}"
version="$collector-$(cat "$here/kube-bin/otelcol/main.go" "$here/kube-bin/otelcol/go.sum" | sha256sum | cut -c1-12)"
cache=${CAPSTAN_CACHE:-$HOME/.cache/capstan}
out="$cache/otelcol/$version"
# shellcheck source=../../test/scripts/go-build.sh
source "$here/scripts/go-build.sh"
mkdir -p "$cache/otelcol"
exec 8>"$cache/otelcol/build.lock"
flock 8
build otelcol "$here/kube-bin/otelcol" . "$out" --version "capstan-otelcol version $version" "-X main.Version=$version"
# The last line is the binary's path.
echo "$out/otelcol"
