#!/usr/bin/env bash
# Starts every image the way the chart runs it (UID 10001, read-only root filesystem, only /tmp
# writable, no capabilities, no privilege escalation) and checks that it serves:
#
#   scripts/images/smoke.sh [TAGS_ENV]      (default: the tags.env of the last build.sh)
#
# Each container gets its own network namespace with nothing but loopback (--network none), so no
# host port is taken and no traffic leaves it; the probes run inside it with the image's own node
# (redis and qdrant: with the gateway image's node, joined to their namespace). Exits 1 on the
# first failure, after printing that container's log. Removes every container it started.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/images/lib.sh

tags=${1:-$(cat "$capstan_cache/images/current")/tags.env}
# shellcheck disable=SC1090
source "$tags"
run_opts=(--detach --read-only --user 10001:10001 "${limit_opts[@]}" --tmpfs /tmp --cap-drop ALL
  --security-opt no-new-privileges)
started=()
# Newest first: a probe container shares its target's network namespace and must go before it.
cleanup() {
  for ((i = ${#started[@]} - 1; i >= 0; i--)); do pod rm --force --time 5 "${started[i]}" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

# The image's own user is 10001 (the chart's runAsUser), and nothing can install or compile.
hardened() { # CONTAINER IMAGE
  local user
  user=$(pod image inspect --format '{{.Config.User}}' "$2")
  [ "$user" = "10001:10001" ] || fail "$1" "$2 runs as '$user', not 10001:10001"
  pod exec "$1" sh -c 'for t in apt apt-get dpkg npm npx corepack yarn pip pip3 python3 gcc cc make; do
    command -v "$t"; done' | grep . && fail "$1" "$2 has the tools above" || true
}

start() { # NAME IMAGE [podman run options...] -- [command...]
  local name=capstan-smoke-$1-$$ image=$2
  shift 2
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  [[ " ${opts[*]} " == *" --network "* ]] || opts+=(--network none)
  started+=("$name")
  pod run --name "$name" "${run_opts[@]}" "${opts[@]}" "$image" "$@" >/dev/null
  hardened "$name" "$image"
}

fail() { # CONTAINER MESSAGE
  echo "[smoke] FAIL $2" >&2
  pod logs "$1" 2>&1 | tail -n 30 >&2
  exit 1
}

# GET until 200, for at most SECONDS; prints the start of the answer.
probe() { # CONTAINER NODE_IMAGE_CONTAINER URL [SECONDS]
  local ctr=$1 via=$2 url=$3 secs=${4:-60}
  pod exec "$via" node -e '
    const [url, secs] = process.argv.slice(1);
    const deadline = Date.now() + Number(secs) * 1000;
    (async () => {
      for (;;) {
        try {
          const r = await fetch(url, { signal: AbortSignal.timeout(30_000) });
          const text = await r.text();
          if (r.ok) { console.log(`${r.status} ${text.slice(0, 160)}`); return; }
          if (Date.now() > deadline) { console.error(`${r.status} ${text.slice(0, 300)}`); process.exit(1); }
        } catch (err) {
          if (Date.now() > deadline) { console.error(String(err.cause ?? err)); process.exit(1); }
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    })();' "$url" "$secs" || fail "$ctr" "$url"
}

resources=(--volume "$PWD/examples:/resources:ro" --env CAPSTAN_RESOURCES_DIR=/resources)

echo "[smoke] gateway: $GATEWAY_IMAGE"
start gateway "$GATEWAY_IMAGE" "${resources[@]}" --
# Health answers on the internal port (metrics and health), not on the port users reach.
probe "capstan-smoke-gateway-$$" "capstan-smoke-gateway-$$" http://127.0.0.1:8090/readyz

echo "[smoke] search: $SEARCH_IMAGE (the model in the image; /readyz answers after it loaded)"
start search "$SEARCH_IMAGE" "${resources[@]}" --
probe "capstan-smoke-search-$$" "capstan-smoke-search-$$" http://127.0.0.1:8091/readyz 120
# A CommonJS -e script importing the bundle's modules: the embedding workers inherit node's
# options, and --input-type=module is refused outside -e (the workers run a file).
pod exec "capstan-smoke-search-$$" node -e '
  (async () => {
    const { LocalEmbedder } = await import("/app/services/search/src/local.mjs");
    const { locateModelFiles } = await import("/app/services/search/src/model-files.mjs");
    const e = await LocalEmbedder.load(locateModelFiles(process.env.CAPSTAN_EMBEDDING_MODEL_DIR));
    const [a, b, c] = await e.embed(["a cat sat on the mat", "a kitten sits on a rug", "quarterly tax filing"]);
    const dot = (x, y) => x.reduce((s, v, i) => s + v * y[i], 0);
    console.log(`embedded: ${e.name}, ${e.dimensions} dimensions; similar ${dot(a, b).toFixed(3)} > unrelated ${dot(a, c).toFixed(3)}`);
    if (!(e.dimensions === 384 && dot(a, b) > dot(a, c))) process.exit(1);
    await e.close();
  })().catch((err) => { console.error(err); process.exit(1); });' || fail "capstan-smoke-search-$$" "embedding in the search image"

echo "[smoke] scraper: $SCRAPER_IMAGE (renderer ready = Chromium launched as UID 10001)"
# Chromium's sandbox (on when not root) chroots inside a user namespace; with every capability
# dropped the default seccomp profile refuses chroot. SYS_CHROOT lets the sandbox start.
start scraper "$SCRAPER_IMAGE" --cap-add SYS_CHROOT --
probe "capstan-smoke-scraper-$$" "capstan-smoke-scraper-$$" http://127.0.0.1:3002/health
probe "capstan-smoke-scraper-$$" "capstan-smoke-scraper-$$" http://127.0.0.1:3000/readyz 90

echo "[smoke] operator: $OPERATOR_IMAGE (no API server: liveness only)"
kubeconfig=$(mktemp)
trap 'cleanup; rm -f "$kubeconfig"' EXIT
printf 'apiVersion: v1\nkind: Config\nclusters: [{name: none, cluster: {server: "https://127.0.0.1:9"}}]\nusers: [{name: none, user: {token: none}}]\ncontexts: [{name: none, context: {cluster: none, user: none}}]\ncurrent-context: none\n' >"$kubeconfig"
chmod 0644 "$kubeconfig"
start operator "$OPERATOR_IMAGE" --volume "$kubeconfig:/kubeconfig:ro" --env KUBECONFIG=/kubeconfig \
  --env CAPSTAN_NAMESPACE=capstan-system --
probe "capstan-smoke-operator-$$" "capstan-smoke-operator-$$" http://127.0.0.1:8081/healthz

echo "[smoke] console: $CONSOLE_IMAGE (standalone mode on the examples: its page and API)"
token=$(mktemp)
trap 'cleanup; rm -f "$kubeconfig" "$token"' EXIT
echo smoke-admin-token >"$token"
chmod 0644 "$token"
start console "$CONSOLE_IMAGE" --volume "$PWD/examples:/resources:ro" --volume "$token:/token:ro" \
  --env CAPSTAN_CONSOLE_STANDALONE_RESOURCES_DIR=/resources --env CAPSTAN_CONSOLE_STANDALONE_STATE_DIR=/tmp \
  --env CAPSTAN_CONSOLE_ADMIN_TOKEN_FILE=/token --
probe "capstan-smoke-console-$$" "capstan-smoke-console-$$" http://127.0.0.1:8098/readyz
probe "capstan-smoke-console-$$" "capstan-smoke-console-$$" http://127.0.0.1:8097/

echo "[smoke] redis: $REDIS_IMAGE"
start redis "$REDIS_IMAGE" --
pod exec "capstan-smoke-redis-$$" redis-cli -h 127.0.0.1 ping | grep -qx PONG || fail "capstan-smoke-redis-$$" "redis PING"
echo "PONG"

echo "[smoke] qdrant: $QDRANT_IMAGE"
# Storage on a folder owned by 10001, as the chart's emptyDir with fsGroup gives it.
storage=$(mktemp -d)
chown 10001:10001 "$storage"
trap 'cleanup; rm -rf "$kubeconfig" "$token" "$storage"' EXIT
start qdrant "$QDRANT_IMAGE" --volume "$storage:/qdrant/storage" --
# The qdrant image has no node: probe from a gateway container (which has no sleep either: node
# waits) inside qdrant's network namespace.
start qdrant-probe "$GATEWAY_IMAGE" --network "container:capstan-smoke-qdrant-$$" -- node -e "setTimeout(() => {}, 300_000)"
probe "capstan-smoke-qdrant-$$" "capstan-smoke-qdrant-probe-$$" http://127.0.0.1:6333/readyz
echo "[smoke] all images serve"
