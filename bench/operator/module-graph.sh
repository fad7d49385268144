#!/usr/bin/env bash
# What client-node's module graph costs a process, with the operator's Node flags: RSS and heap
# after importing undici alone (the transport both layers use), undici + all of
# @kubernetes/client-node (what the processes load today), and undici + an esbuild bundle of only
# the client-node exports the code uses, tree-shaken (what loading only the parts used would cost).
# Three fresh processes each.   bash bench/operator/module-graph.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
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
await import("$PWD/node_modules/undici/index.js");
if (what === "client-node") await import("$PWD/node_modules/@kubernetes/client-node/dist/index.js");
if (what === "bundle") await import("$PWD/$bundle");
for (let i = 0; i < 3; i++) global.gc();
const m = process.memoryUsage();
console.log(JSON.stringify({ what, rssMB: +(m.rss / 2 ** 20).toFixed(1), heapMB: +(m.heapUsed / 2 ** 20).toFixed(1) }));
JS
echo "bundle: $(du -k "$bundle" | cut -f1) KB"
for run in 1 2 3; do
  for what in undici client-node bundle; do
    MALLOC_ARENA_MAX=2 node_modules/.bin/node --expose-gc --max-old-space-size=192 --max-semi-space-size=2 "$tmp/measure.mjs" "$what"
  done
done
