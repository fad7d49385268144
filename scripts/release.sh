#!/usr/bin/env bash
# Publishes what a Capstan release is to an OCI registry, and writes down what was published:
#
#   scripts/release.sh REGISTRY OUT_DIR
#
# REGISTRY is host[:port][/path] (e.g. registry.example.com/platform). You are logged in to it
# already (`crane auth login`, `helm registry login`). REGISTRY_CA names a CA bundle when the
# registry's certificate comes from a private CA. CRANE and HELM name the binaries (default: on
# PATH); IMAGES_DIR the image build to publish (default: the last scripts/images/build.sh).
#
# 1. pushes the seven images (scripts/images/build.sh's archives) with crane to
#    REGISTRY/capstan/<name>:<image tag>, and records each one's digest;
# 2. packages charts/capstan and pushes it with helm to oci://REGISTRY/charts/capstan:<version>;
# 3. writes OUT_DIR/images.yaml (every image as repository + digest: `helm install -f` it),
#    OUT_DIR/release.env (the same references, the chart's address, version and digest),
#    the chart's .tgz and OUT_DIR/SHA256SUMS over all of them.
set -euo pipefail
cd "$(dirname "$0")/.."

registry=${1:?usage: scripts/release.sh REGISTRY OUT_DIR}
out=${2:?usage: scripts/release.sh REGISTRY OUT_DIR}
crane=${CRANE:-crane}
helm=${HELM:-helm}
images=${IMAGES_DIR:-$(cat "${CAPSTAN_CACHE:-$HOME/.cache/capstan}/images/current")}
ca_args=()
if [ -n "${REGISTRY_CA:-}" ]; then
  # crane is a Go program: it trusts SSL_CERT_FILE in place of the system's roots.
  export SSL_CERT_FILE=$REGISTRY_CA
  ca_args=(--ca-file "$REGISTRY_CA")
fi
log() { printf '[release] %s\n' "$*" >&2; }

# shellcheck disable=SC1091 # written by scripts/images/build.sh
source "$images/tags.env"
mkdir -p "$out"
chart_version=$(awk '/^version:/ {print $2}' charts/capstan/Chart.yaml)
{
  echo "# Capstan $chart_version: every image by digest (helm install -f this file)."
} >"$out/images.yaml"
: >"$out/release.env"

for name in operator gateway search scraper console redis qdrant; do
  start=$SECONDS
  ref=$("$crane" push "$images/$name.tar" "$registry/capstan/$name:$IMAGE_TAG")
  digest=${ref##*@}
  log "$name: $ref ($((SECONDS - start)) s)"
  echo "$(echo "$name" | tr a-z A-Z)_IMAGE=$ref" >>"$out/release.env"
  # The development Redis and Qdrant are images of their own under <name>.deploy.
  case $name in
    redis | qdrant) format='%s:\n  deploy:\n    image:\n      repository: %s\n      digest: %s\n' ;;
    *) format='%s:\n  image:\n    repository: %s\n    digest: %s\n' ;;
  esac
  # shellcheck disable=SC2059 # the format is one of the two above
  printf "$format" "$name" "$registry/capstan/$name" "$digest" >>"$out/images.yaml"
done

rm -f "$out/capstan-$chart_version.tgz"
"$helm" package charts/capstan --destination "$out" >/dev/null
if ! pushed=$("$helm" push "$out/capstan-$chart_version.tgz" "oci://$registry/charts" "${ca_args[@]}" 2>&1); then
  echo "$pushed" >&2
  exit 1
fi
chart_digest=$(echo "$pushed" | awk '/^Digest:/ {print $2}')
: "${chart_digest:?helm push printed no digest: $pushed}"
log "chart: oci://$registry/charts/capstan:$chart_version@$chart_digest"
cat >>"$out/release.env" <<VARS
CHART=oci://$registry/charts/capstan
CHART_VERSION=$chart_version
CHART_DIGEST=$chart_digest
VARS
(cd "$out" && sha256sum "capstan-$chart_version.tgz" images.yaml release.env >SHA256SUMS)
log "written: $out/{images.yaml,release.env,capstan-$chart_version.tgz,SHA256SUMS}"
