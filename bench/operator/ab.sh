#!/usr/bin/env bash
# A/B of the operator with and without @kubernetes/client-node: the same tree (HEAD) twice, once
# as it is and once with its Kubernetes layer replaced by the hand-written one it had before
# client-node (the files below, from LAYER_BASE, plus hand-written.patch: the replace() the
# operator has called since). Everything else (reconcilers, informers' users, workqueue, bench
# code, dependencies, Node flags, objects) is identical. Both trees share this tree's node_modules
# (run `npm install` here first). Both arms run at the same time, each with its own etcd,
# kube-apiserver and operator, so on a shared machine they see the same load (SEQUENTIAL=1: one
# after the other, the order alternating between runs). Prints each run's lines, prefixed with its
# arm, and a Markdown table of the RESULT lines. Then it checks the work and exits 1 unless every
# arm of every run exited 0 with a complete RESULT line (its channels Ready, checked by the bench)
# and each arm ran the layer it is named after (a swap that silently failed would compare
# client-node with itself); it ends with "work checked:" otherwise.
#   bash bench/operator/ab.sh     (NODE_FLAGS, CHANNELS, TOTAL, RUNS, SEQUENTIAL, HEAD, LAYER_BASE
#                                  and the bench's *_TIMEOUT_S may be set)
#   bash bench/operator/ab.sh --smoke   (or BENCH_SMOKE=1: CHANNELS=3 TOTAL=6 unless set)
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = "--smoke" ] || [ "${BENCH_SMOKE:-}" = "1" ]; then
  export BENCH_SMOKE=1 CHANNELS="${CHANNELS:-3}" TOTAL="${TOTAL:-6}"
fi
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
  git worktree add --detach "$d" "$HEAD" >/dev/null 2>&1
  cp "$here"/bench/operator/*.ts "$here"/bench/operator/hand-written.patch "$d/bench/operator/"
  cp "$here"/bench/work.ts "$d/bench/"
  # This tree's dependencies; the workspace links point into the checkout.
  mkdir "$d/node_modules"
  for e in "$here"/node_modules/* "$here"/node_modules/.bin; do
    [ "$(basename "$e")" = "@capstan" ] || ln -s "$e" "$d/node_modules/$(basename "$e")"
  done
  cp -a "$here/node_modules/@capstan" "$d/node_modules/"
  # Packages npm nested under a workspace (a version the root does not hold) are linked too.
  for e in "$here"/services/*/node_modules "$here"/operator/node_modules "$here"/console/node_modules; do
    [ -d "$e" ] && ln -s "$e" "$d/${e#"$here"/}"
  done
  echo "$d"
}
# checkout runs in a subshell ($(...)): the caller records each tree for the cleanup.
with_dir="$(checkout)"
dirs+=("$with_dir")
without_dir="$(checkout)"
dirs+=("$without_dir")
(cd "$without_dir" && git checkout "$LAYER_BASE" -- "${LAYER_FILES[@]}" && git apply bench/operator/hand-written.patch)
echo "[ab] HEAD $(git rev-parse --short "$HEAD"); hand-written layer from $(git rev-parse --short "$LAYER_BASE")" >&2
results="$(mktemp)"
failed="$(mktemp)"
dirs+=("$results" "$failed")
run_arm() { # tree, label: the bench in tree, each line prefixed with label, RESULT lines collected
  if ! (cd "$1" && node_modules/.bin/node bench/operator/bench.ts 2>&1) | while IFS= read -r line; do
    case "$line" in \{*) continue ;; esac # the operator's own warnings (retries under load)
    echo "[$2] $line"
    case "$line" in RESULT\ *) echo "$2 ${line#RESULT }" >>"$results" ;; esac
  done; then
    echo "$2 (run $run)" >>"$failed"
  fi
}
for run in $(seq 1 "$RUNS"); do
  echo "[ab] run $run (NODE_FLAGS=$NODE_FLAGS CHANNELS=$CHANNELS TOTAL=$TOTAL; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%H:%M:%S) UTC)"
  if [ "${SEQUENTIAL:-}" = "1" ]; then
    # One after the other, the order alternating between runs.
    if [ $((run % 2)) -eq 1 ]; then
      run_arm "$without_dir" hand-written
      run_arm "$with_dir" client-node
    else
      run_arm "$with_dir" client-node
      run_arm "$without_dir" hand-written
    fi
  else
    # Both at once (the default): each arm has its own etcd, kube-apiserver and operator, and both
    # see the same machine load for the whole run.
    run_arm "$without_dir" hand-written &
    run_arm "$with_dir" client-node &
    wait
  fi
done
node_modules/.bin/node -e '
const fs = require("fs");
const [results, failed, runs, total] = [process.argv[1], process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
// Each line: the arm, then the RESULT JSON.
const rows = fs.readFileSync(results, "utf8").trim().split("\n").filter(Boolean).map((l) => {
  const at = l.indexOf(" ");
  return { arm: l.slice(0, at), ...JSON.parse(l.slice(at + 1)) };
});
const cols = ["layer", "complete", "readySeconds", "cpuPerEventReadyMicros", "cpuPerEventFillMicros", "resyncWrites", "fillSeconds", "ready", "cached", "rssMB", "heapMB", "idleRssMB", "idleHeapMB", "load"];
console.log("| " + cols.join(" | ") + " |");
console.log("|" + cols.map(() => "---").join("|") + "|");
for (const r of rows) console.log("| " + cols.map((c) => r[c] ?? "").join(" | ") + " |");
// The work: every arm of every run exited 0 with a complete RESULT of the layer it is named after.
const problems = fs.readFileSync(failed, "utf8").trim().split("\n").filter(Boolean).map((a) => `${a} exited non-zero`);
for (const arm of ["hand-written", "client-node"]) {
  const mine = rows.filter((r) => r.arm === arm);
  const done = mine.filter((r) => r.complete === true && r.ready === total && r.layer === arm);
  if (done.length !== runs) problems.push(`${arm}: expected ${runs} complete RESULT lines of the ${arm} layer with ${total} Ready, saw ${done.length} (of ${mine.length}: ${mine.map((r) => `layer ${r.layer}, complete ${r.complete}, ready ${r.ready}`).join("; ")})`);
}
if (problems.length) {
  console.error(`ab: did not do its work: ${problems.join("; ")}`);
  process.exit(1);
}
console.log(`work checked: ${rows.length} complete runs (${runs} per arm), each arm on its own layer with ${total} channels Ready`);
' "$results" "$failed" "$RUNS" "$TOTAL"
