#!/usr/bin/env bash
# The trace receiver of the test ground: Jaeger v2 (an OpenTelemetry Collector distribution with
# an OTLP receiver, in-memory storage and Jaeger's query API), built from the Go module proxy into
# the binary cache, keyed by version, like the Kubernetes binaries. test/ground/jaeger.ts starts
# one per test file that reads traces back (test/foundation/traces.test.ts).
#
# Jaeger links every storage backend it supports (Elasticsearch, Cassandra, Kafka, ...) and its
# components live under internal/, so no smaller main can be assembled from outside its module:
# the first build takes long on two cores (see docs/testing.md for the measured time); afterwards
# the cached binary is reused while it reports the pinned version.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$repo/test"
export PATH="/usr/local/go/bin:$PATH"
version=$(awk '$1 == "github.com/jaegertracing/jaeger" {print $2}' "$here/kube-bin/jaeger/go.mod")
: "${version:?no github.com/jaegertracing/jaeger require line in test/kube-bin/jaeger/go.mod}"
cache=${CAPSTAN_CACHE:-$HOME/.cache/capstan}
out="$cache/jaeger/$version"
# shellcheck source=../../test/scripts/go-build.sh
source "$here/scripts/go-build.sh"
mkdir -p "$cache/jaeger"
exec 8>"$cache/jaeger/build.lock"
flock 8
build jaeger "$here/kube-bin/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger "$out" version \
  "\"gitVersion\":\"$version\"" "-X github.com/jaegertracing/jaeger/internal/version.latestVersion=$version"
# The last line is the binary's path.
echo "$out/jaeger"
