#!/usr/bin/env bash
# A/B of the operator on its two Kubernetes layers: HEAD (client-node) and BASE, by default the
# last commit before client-node replaced the hand-written layer. Both are checked out into
# temporary worktrees and run the same bench code (HEAD's bench/operator, which finds the layer at
# run time), the same Node flags and the same objects (CHANNELS at once, then up to TOTAL
# AccessChannels and their key Secrets), one after the other on the same machine. Prints each run
# and a Markdown table of the RESULT lines.
#   bash bench/operator/ab.sh     (NODE_FLAGS, CHANNELS, TOTAL, BASE, HEAD, RUNS may be set)
set -euo pipefail
cd "$(dirname "$0")/../.."
export NODE_FLAGS="${NODE_FLAGS---max-old-space-size=192 --max-semi-space-size=2}"
export CHANNELS="${CHANNELS:-1000}" TOTAL="${TOTAL:-10000}"
HEAD="${HEAD:-$(git rev-parse HEAD)}"
BASE="${BASE:-$(git rev-list -1 "$HEAD" -- services/shared/src/kube/access.ts)^}"
RUNS="${RUNS:-1}"
bench_src="$PWD/bench/operator"
dirs=()
cleanup() { for d in "${dirs[@]}"; do git worktree remove --force "$d" >/dev/null 2>&1 || rm -rf "$d"; done; }
trap cleanup EXIT
checkout() {
  local d
  d="$(mktemp -d /tmp/capstan-ab-XXXXXX)"
  dirs+=("$d")
  git worktree add --detach "$d" "$1" >/dev/null
  cp "$bench_src/bench.ts" "$bench_src/operator-process.ts" "$bench_src/layer.ts" "$d/bench/operator/"
  echo "[ab] $(git rev-parse --short "$1") in $d: installing its dependencies" >&2
  (cd "$d" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$d"
}
base_dir="$(checkout "$BASE")"
head_dir="$(checkout "$HEAD")"
results="$(mktemp)"
for run in $(seq 1 "$RUNS"); do
  for tree in "$base_dir" "$head_dir"; do
    echo "[ab] run $run: $tree (NODE_FLAGS=$NODE_FLAGS CHANNELS=$CHANNELS TOTAL=$TOTAL; load $(cut -d' ' -f1-3 /proc/loadavg))"
    (cd "$tree" && node_modules/.bin/node bench/operator/bench.ts 2>&1) | while IFS= read -r line; do
      echo "$line"
      case "$line" in RESULT\ *) echo "${line#RESULT }" >>"$results" ;; esac
    done
  done
done
node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const cols = ["layer", "readySeconds", "cpuPerEventReadyMicros", "cpuPerEventFillMicros", "resyncWrites", "cached", "rssMB", "heapMB", "idleRssMB", "idleHeapMB"];
console.log("| " + cols.join(" | ") + " |");
console.log("|" + cols.map(() => "---").join("|") + "|");
for (const r of rows) console.log("| " + cols.map((c) => r[c]).join(" | ") + " |");
' "$results"
