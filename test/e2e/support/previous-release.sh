#!/usr/bin/env bash
# The previous release's images and chart, built once per machine from its commit
# (test/e2e/support/previous-release.ts names the commit and publishes them):
#
#   test/e2e/support/previous-release.sh SHA
#
# Builds into ~/.cache/capstan/previous-release/<SHA> (CAPSTAN_CACHE moves ~/.cache/capstan):
#   images/<tag>/         the commit's scripts/images/build.sh archives and tags.env
#   images/current        that folder's path (what the commit's scripts/release.sh reads as IMAGES_DIR)
#   src/                  the commit's scripts/release.sh and charts/capstan, to publish them
# and prints the images folder. A second call finds it complete and builds nothing.
#
# The commit is checked out in a temporary git worktree (any clone with its history has it) and its
# own build.sh runs there, with buildah's store shared with this tree's builds, so the base image
# and unchanged layers are reused. Its build.sh prunes from that store the images of builds it does
# not know: empty folders named after this tree's builds stand in for them while it runs (and the
# tree's build lock is held), so the tree's layer cache survives.
set -euo pipefail
sha=${1:?usage: previous-release.sh SHA}
repo=$(cd "$(dirname "$0")/../../.." && pwd)
cache=${CAPSTAN_CACHE:-$HOME/.cache/capstan}
root=$cache/previous-release/$sha
log() { printf '[previous-release] %s\n' "$*" >&2; }

mkdir -p "$root"
exec 7>"$root.lock"
flock 7
done_dir() { [ -f "$root/images/current" ] && [ -f "$(cat "$root/images/current")/tags.env" ] && [ -f "$root/src/scripts/release.sh" ]; }
if done_dir; then
  log "up to date: $(cat "$root/images/current")"
  cat "$root/images/current"
  exit 0
fi

have_commit() { git -C "$repo" cat-file -e "$sha^{commit}" 2>/dev/null; }
if ! have_commit; then
  # A shallow or single-branch clone (CI's, often): fetch the commit from where the clone came
  # from, once, with a time limit.
  log "commit $sha is not in $repo; fetching it from origin"
  timeout 300 git -C "$repo" fetch --quiet origin "$sha" 2>/dev/null ||
    timeout 300 git -C "$repo" fetch --quiet --unshallow origin 2>/dev/null || true
fi
if ! have_commit; then
  log "commit $sha is not in $repo and could not be fetched from origin (fetch the history: git fetch --unshallow)"
  exit 1
fi
start=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/capstan-previous-XXXXXX")
placeholders=()
cleanup() {
  for p in "${placeholders[@]}"; do rmdir "$p" 2>/dev/null || true; done
  git -C "$repo" worktree remove --force "$work/tree" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
git -C "$repo" worktree add --quiet --detach "$work/tree" "$sha"

# The tree's build lock: neither build prunes what the other is building.
mkdir -p "$cache/images" "$root/images"
exec 9>"$cache/images/.lock"
flock 9
for d in "$cache"/images/*/; do
  tag=$(basename "$d")
  [[ $tag == *.tmp ]] && continue
  if [ ! -e "$root/images/$tag" ]; then
    mkdir "$root/images/$tag"
    placeholders+=("$root/images/$tag")
  fi
done
# The Qdrant server the commit's images carry: the one installed for this tree (same version, or
# the commit's setup installs its own beside it from the vendored folder).
[ -e "$root/qdrant" ] || ln -s "$cache/qdrant" "$root/qdrant"
CAPSTAN_CACHE=$root CAPSTAN_CONTAINERS=${CAPSTAN_CONTAINERS:-$cache/containers} CAPSTAN_IMAGES_KEEP=1000 \
  QDRANT_VENDOR_DIR=${QDRANT_VENDOR_DIR:-$repo/../shared/vendor/qdrant} \
  nice -n 10 bash "$work/tree/scripts/images/build.sh" >&2
for p in "${placeholders[@]}"; do rmdir "$p"; done
placeholders=()

rm -rf "$root/src.tmp" && mkdir -p "$root/src.tmp"
git -C "$repo" archive "$sha" scripts/release.sh charts/capstan | tar -x -C "$root/src.tmp"
rm -rf "$root/src" && mv "$root/src.tmp" "$root/src"
log "built $sha in $((SECONDS - start)) s: $(cat "$root/images/current")"
cat "$root/images/current"
