#!/usr/bin/env bash
# A/B of the operator with and without @kubernetes/client-node: the same tree (HEAD) twice, once
# as it is and once with its Kubernetes layer replaced by the hand-written one it had before
# client-node (the files below, from LAYER_BASE, plus hand-written.patch: the replace() the
# operator has called since). Everything else (reconcilers, informers' users, workqueue, bench
# code, dependencies, Node flags, objects) is identical. Both trees share this tree's node_modules
# (run `npm install` here first). Runs alternate (A B, then B A, ...) on the same machine in one
# session, so both see the same load. Prints each run and a Markdown table of the RESULT lines.
#   bash bench/operator/ab.sh     (NODE_FLAGS, CHANNELS, TOTAL, RUNS, HEAD, LAYER_BASE and the
#                                  bench's *_TIMEOUT_S may be set)
set -euo pipefail
cd "$(dirname "$0")/../.."
export NODE_FLAGS="${NODE_FLAGS---max-old-space-size=192 --max-semi-space-size=2}"
export CHANNELS="${CHANNELS:-1000}" TOTAL="${TOTAL:-10000}"
HEAD="${HEAD:-$(git rev-parse HEAD)}"
# The last commit with the hand-written layer: the parent of the one that deleted its kubeconfig loader.
LAYER_BASE="${LAYER_BASE:-$(git rev-list -1 "$HEAD" -- services/shared/src/kube/access.ts)^}"
LAYER_FILES=(
  services/shared/src/kube/access.ts services/shared/src/kube/http.ts services/shared/src/kube/index.ts
  services/shared/src/kube/objects.ts services/shared/src/kube/reflector.ts
  operator/src/kube/client.ts operator/src/kube/events.ts operator/src/kube/informer.ts operator/src/leader/lease.ts
)
RUNS="${RUNS:-1}"
here="$PWD"
dirs=()
cleanup() { for d in "${dirs[@]}"; do git worktree remove --force "$d" >/dev/null 2>&1 || rm -rf "$d"; done; }
trap cleanup EXIT
checkout() {
  local d e
  d="$(mktemp -d /tmp/capstan-ab-XXXXXX)"
  dirs+=("$d")
  git worktree add --detach "$d" "$HEAD" >/dev/null 2>&1
  cp "$here"/bench/operator/*.ts "$here"/bench/operator/hand-written.patch "$d/bench/operator/"
  # This tree's dependencies; the workspace links point into the checkout.
  mkdir "$d/node_modules"
  for e in "$here"/node_modules/* "$here"/node_modules/.bin; do
    [ "$(basename "$e")" = "@capstan" ] || ln -s "$e" "$d/node_modules/$(basename "$e")"
  done
  cp -a "$here/node_modules/@capstan" "$d/node_modules/"
  echo "$d"
}
with_dir="$(checkout)"
without_dir="$(checkout)"
(cd "$without_dir" && git checkout "$LAYER_BASE" -- "${LAYER_FILES[@]}" && git apply bench/operator/hand-written.patch)
echo "[ab] HEAD $(git rev-parse --short "$HEAD"); hand-written layer from $(git rev-parse --short "$LAYER_BASE")" >&2
results="$(mktemp)"
for run in $(seq 1 "$RUNS"); do
  order=("$without_dir" "$with_dir")
  [ $((run % 2)) -eq 0 ] && order=("$with_dir" "$without_dir")
  for tree in "${order[@]}"; do
    echo "[ab] run $run: $tree (NODE_FLAGS=$NODE_FLAGS CHANNELS=$CHANNELS TOTAL=$TOTAL; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%H:%M:%S) UTC)"
    (cd "$tree" && node_modules/.bin/node bench/operator/bench.ts 2>&1) | while IFS= read -r line; do
      echo "$line"
      case "$line" in RESULT\ *) echo "${line#RESULT }" >>"$results" ;; esac
    done
  done
done
node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
const cols = ["layer", "complete", "readySeconds", "cpuPerEventReadyMicros", "cpuPerEventFillMicros", "resyncWrites", "fillSeconds", "cached", "rssMB", "heapMB", "idleRssMB", "idleHeapMB", "load"];
console.log("| " + cols.join(" | ") + " |");
console.log("|" + cols.map(() => "---").join("|") + "|");
for (const r of rows) console.log("| " + cols.map((c) => r[c] ?? "").join(" | ") + " |");
' "$results"
