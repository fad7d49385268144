#!/usr/bin/env bash
# What client-node's module graph costs a process, with the operator's Node flags: RSS and heap
# after importing undici alone (the transport both layers use), undici + all of
# @kubernetes/client-node (what the processes load today), and undici + an esbuild bundle of only
# the client-node exports the code uses, tree-shaken (what loading only the parts used would cost).
# Three fresh processes each.   bash bench/operator/module-graph.sh
# Each process must have loaded what it measures (client-node's and the bundle's exports, named in
# its line), and every process must have printed its line, before the script ends with "work
# checked:"; it exits 1 otherwise. Smoke mode (--smoke or BENCH_SMOKE=1): one process each.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=3
if [ "${1:-}" = "--smoke" ] || [ "${BENCH_SMOKE:-}" = "1" ]; then RUNS=1; fi
tmp="$(mktemp -d)"
# The bundle is built and loaded inside this tree, where it finds client-node and undici.
entry="bench/operator/.module-graph-entry.mjs"
bundle="bench/operator/.module-graph-bundle.mjs"
trap 'rm -rf "$tmp" "$entry" "$bundle"' EXIT
cat >"$entry" <<'JS'
export {
  ApiException, createConfiguration, CoordinationV1Api, CustomObjectsApi, EventsV1Api, HttpMethod, KubeConfig,
  KubernetesObjectApi, Observable, PatchStrategy, RequestContext, ResponseContext, ServerConfiguration, V1MicroTime,
  Watch, wrapHttpLibrary,
} from "@kubernetes/client-node";
JS
node_modules/.bin/esbuild "$entry" --bundle --platform=node --format=esm --tree-shaking=true --log-level=error \
  --external:undici --outfile="$bundle" \
  "--banner:js=import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);"
cat >"$tmp/measure.mjs" <<JS
const what = process.argv[2];
const undici = await import("$PWD/node_modules/undici/index.js");
let loaded = undici;
if (what === "client-node") loaded = await import("$PWD/node_modules/@kubernetes/client-node/dist/index.js");
if (what === "bundle") loaded = await import("$PWD/$bundle");
for (let i = 0; i < 3; i++) global.gc();
const m = process.memoryUsage();
// kubeConfig: the module measured has client-node's KubeConfig (the work check reads it).
const kubeConfig = typeof loaded.KubeConfig === "function";
console.log(JSON.stringify({ what, rssMB: +(m.rss / 2 ** 20).toFixed(1), heapMB: +(m.heapUsed / 2 ** 20).toFixed(1), exports: Object.keys(loaded).length, kubeConfig }));
JS
echo "bundle: $(du -k "$bundle" | cut -f1) KB"
for run in $(seq 1 "$RUNS"); do
  for what in undici client-node bundle; do
    MALLOC_ARENA_MAX=2 node_modules/.bin/node --expose-gc --max-old-space-size=192 --max-semi-space-size=2 "$tmp/measure.mjs" "$what"
  done
done | tee "$tmp/lines"
# The work: RUNS lines of each, each process having loaded what it names (client-node's KubeConfig
# in the client-node and bundle processes, not in undici's), the bundle with every name its entry exports.
node_modules/.bin/node -e '
const fs = require("fs");
const [file, runs, entry] = [process.argv[1], Number(process.argv[2]), process.argv[3]];
// The names the entry exports, as many as the bundle must have.
const names = /\{([^}]*)\}/.exec(fs.readFileSync(entry, "utf8"))[1].split(",").filter((n) => n.trim()).length;
const rows = fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
const problems = [];
for (const what of ["undici", "client-node", "bundle"]) {
  const mine = rows.filter((r) => r.what === what);
  if (mine.length !== runs) problems.push(`${what}: expected ${runs} lines, saw ${mine.length}`);
  for (const r of mine) {
    if (!(r.rssMB > 0 && r.heapMB > 0)) problems.push(`${what}: no memory figures`);
    if (r.kubeConfig !== (what !== "undici")) problems.push(`${what}: KubeConfig ${r.kubeConfig ? "loaded" : "not loaded"}`);
    if (what === "bundle" && r.exports !== names) problems.push(`bundle: expected ${names} exports, saw ${r.exports}`);
  }
}
if (problems.length) {
  console.error(`module-graph: did not do its work: ${problems.join("; ")}`);
  process.exit(1);
}
console.log(`work checked: ${rows.length} processes (${runs} each of undici, client-node, bundle), each loaded what it measures`);
' "$tmp/lines" "$RUNS" "$entry"
