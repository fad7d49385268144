#!/usr/bin/env bash
# A/B of the operator on its two Kubernetes layers: this tree (client-node) and BASE, by default
# the last commit before client-node replaced the hand-written layer. Both run the same bench code
# (this tree's bench/operator, which finds the layer at run time), the same Node flags, the same
# objects (CHANNELS at once, then up to TOTAL AccessChannels and their key Secrets), one after the
# other on the same machine. Prints a RESULT line per run and a Markdown table.
#   bash bench/operator/ab.sh     (NODE_FLAGS, CHANNELS, TOTAL, BASE, RUNS may be set)
set -euo pipefail
cd "$(dirname "$0")/../.."
export NODE_FLAGS="${NODE_FLAGS---max-old-space-size=192 --max-semi-space-size=2}"
export CHANNELS="${CHANNELS:-1000}" TOTAL="${TOTAL:-10000}"
BASE="${BASE:-$(git rev-list -1 HEAD -- services/shared/src/kube/access.ts)^}"
RUNS="${RUNS:-1}"
base_dir="$(mktemp -d /tmp/capstan-ab-XXXXXX)"
cleanup() { git worktree remove --force "$base_dir" >/dev/null 2>&1 || rm -rf "$base_dir"; }
trap cleanup EXIT
git worktree add --detach "$base_dir" "$BASE" >/dev/null
cp bench/operator/bench.ts bench/operator/operator-process.ts bench/operator/layer.ts "$base_dir/bench/operator/"
echo "[ab] installing the base tree's dependencies ($(git rev-parse --short "$BASE"))"
(cd "$base_dir" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --loglevel=error >/dev/null)
results="$(mktemp)"
for run in $(seq 1 "$RUNS"); do
  for tree in "$base_dir" "$PWD"; do
    echo "[ab] run $run: $tree (NODE_FLAGS=$NODE_FLAGS CHANNELS=$CHANNELS TOTAL=$TOTAL)"
    (cd "$tree" && node_modules/.bin/node bench/operator/bench.ts) | tee /dev/stderr | grep '^RESULT ' >>"$results"
  done
done
node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l.slice(7)));
const cols = ["layer", "readySeconds", "cpuPerEventReadyMicros", "cpuPerEventFillMicros", "resyncWrites", "cached", "rssMB", "heapMB", "idleRssMB", "idleHeapMB"];
console.log("| " + cols.join(" | ") + " |");
console.log("|" + cols.map(() => "---").join("|") + "|");
for (const r of rows) console.log("| " + cols.map((c) => r[c]).join(" | ") + " |");
' "$results"
