#!/usr/bin/env bash
# Installs everything Capstan's tests and standalone mode need on a fresh Debian 12 machine,
# idempotently: Debian packages (redis-server, chromium-headless-shell, openssl), npm dependencies (which bring
# Node 24 as the `node` package), etcd, kube-apiserver and helm built from the Go module proxy, and each
# service's own needs (scripts/setup.d/*.sh). Safe to run again; quick when nothing is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
log() { printf '[setup] %s\n' "$*"; }

apt_packages=(redis-server chromium-headless-shell openssl)
missing=()
for p in "${apt_packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's redis-server package starts a system instance on :6379; the tests start their own.

if [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # `npm install`, not `npm ci`: npm 11 here writes lock files without the other platforms'
  # optional packages (biome, rollup, esbuild binaries) and `npm ci` then refuses them as out of
  # sync; `npm install` installs exactly the locked versions and leaves the lock unchanged.
  log "installing npm dependencies (npm install from package-lock.json)"
  # Install scripts that would download (onnxruntime-node's CUDA files) are denied in package.json
  # "allowScripts"; the variable says the same to npm versions that run scripts regardless.
  export ONNXRUNTIME_NODE_INSTALL=skip
  npm install --no-audit --no-fund --loglevel=error
fi
export PATH="$PWD/node_modules/.bin:$PATH"
log "node $(node --version)"

# The container images the e2e tests install (scripts/images/build.sh) build in the background
# while the Go builds below run: buildah spends its time on downloads, dpkg and compression more
# than on compiling, so the two overlap well on two cores. Its tools come first (30-images.sh);
# its output goes to a log printed when it ends. CAPSTAN_SKIP_IMAGES=1 leaves the images to the
# e2e tests' own build.
images_pid=""
if [ "${CAPSTAN_SKIP_IMAGES:-}" != "1" ]; then
  log "running scripts/setup.d/30-images.sh"
  bash scripts/setup.d/30-images.sh
  images_log=$(mktemp -t capstan-images-build.XXXXXX.log)
  log "building the container images in the background (log: $images_log)"
  # Its own session, so that a failing step below can stop the whole build (trap).
  setsid bash scripts/images/build.sh >"$images_log" 2>&1 &
  images_pid=$!
  trap '[ -n "$images_pid" ] && kill -- -"$images_pid" 2>/dev/null' EXIT
fi

if [ "${CAPSTAN_SKIP_KUBE:-}" != "1" ]; then
  bash test/scripts/build-kube-binaries.sh
fi

for snippet in scripts/setup.d/*.sh; do
  [ -e "$snippet" ] || continue
  [ -n "$images_pid" ] && [ "$(basename "$snippet")" = 30-images.sh ] && continue
  log "running $snippet"
  bash "$snippet"
done

if [ -n "$images_pid" ]; then
  log "waiting for the container images"
  if ! wait "$images_pid"; then
    tail -n 40 "$images_log" >&2
    log "the container image build failed (whole log: $images_log)"
    exit 1
  fi
  images_pid=""
  grep -E '^\[images\] ' "$images_log" | tail -n 12
  rm -f "$images_log"
fi
log "done in $((SECONDS - start)) s"
