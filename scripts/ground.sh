#!/usr/bin/env bash
# Sets up the test ground, idempotently: what the tests use beyond what `npm start` needs
# (scripts/setup.sh, run first). `npm test` runs this before the tests, so the README's test command
# does all the set-up the tests need on a fresh machine, and takes seconds once the cache is warm.
#   - the container images of this tree (scripts/images/build.sh, in the background: buildah spends
#     its time on downloads, dpkg and compression more than compiling, so it overlaps the Go builds);
#   - etcd, kube-apiserver and helm (test/scripts/build-kube-binaries.sh), then every snippet of
#     scripts/setup.d/ that setup.sh does not run: the node's components, Qdrant, the second model
#     and tokenizer files, the documents and scraper-bench corpora, the OTel collector, Prometheus,
#     schemathesis.
# Everything lands in ~/.cache/capstan (CAPSTAN_CACHE). CAPSTAN_SKIP_IMAGES=1 leaves the images to
# the e2e tests' own build; CAPSTAN_SKIP_KUBE=1 skips the Go builds of the cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/steps.sh
steps_begin ground
export PATH="$PWD/node_modules/.bin:$PATH"
if ! command -v node >/dev/null || [ ! -d node_modules ]; then
  say "no npm dependencies: run \`bash scripts/setup.sh\` first"
  exit 1
fi
# The snippets scripts/setup.sh runs itself (what `npm start` needs).
start_snippets=" 40-search.sh 50-scraper.sh "

images_pid=""
images_log=""
if [ "${CAPSTAN_SKIP_IMAGES:-}" != "1" ]; then
  step "tools for the container images (scripts/setup.d/30-images.sh)" bash scripts/setup.d/30-images.sh
  images_log=$(mktemp -t capstan-images-build.XXXXXX.log)
  say "container images: building in the background (log: $images_log)"
  images_began=$SECONDS
  # Its own session, so that a failing step below can stop the whole build (trap).
  setsid bash scripts/images/build.sh >"$images_log" 2>&1 &
  images_pid=$!
  trap '[ -n "$images_pid" ] && kill -- -"$images_pid" 2>/dev/null' EXIT
fi

if [ "${CAPSTAN_SKIP_KUBE:-}" != "1" ]; then
  step "etcd, kube-apiserver and helm from the Go module proxy" bash test/scripts/build-kube-binaries.sh
fi

for snippet in scripts/setup.d/*.sh; do
  name=$(basename "$snippet")
  case "$start_snippets" in *" $name "*) continue ;; esac
  [ "$name" = 30-images.sh ] && [ -n "$images_pid" ] && continue
  step "scripts/setup.d/$name" bash "$snippet"
done

if [ -n "$images_pid" ]; then
  say "waiting for the container images"
  if ! wait "$images_pid"; then
    tail -n 40 "$images_log" >&2
    say "the container image build failed (whole log: $images_log)"
    exit 1
  fi
  images_pid=""
  grep -E '^\[images\] ' "$images_log" | tail -n 12
  say "container images: ready $((SECONDS - images_began)) s after they started"
  rm -f "$images_log"
fi
steps_end
