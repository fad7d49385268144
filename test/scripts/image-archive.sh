# Sourced by build-node-binaries.sh and scripts/setup.d/62-prometheus-operator.sh: one definition of
# how a local image is made without a registry or an image builder.
#
# image_archive ref rootfs-dir out.tar cmd-json [entrypoint-json]: a one-layer image as a
# docker-archive (manifest.json + config + layer.tar), which `ctr images import` reads. The layer is
# a reproducible tar of rootfs-dir (sorted, owner 0, mtime 0), so the same files give the same
# image id. An entrypoint is needed when Kubernetes passes `args` alone (the Prometheus Operator's
# containers do): args replace the image's Cmd, never its Entrypoint.
image_archive() {
  local ref=$1 rootfs=$2 out=$3 cmd=$4 entrypoint="" work
  [ -n "${5:-}" ] && entrypoint="\"Entrypoint\":$5,"
  work=$(mktemp -d)
  mkdir -p "$work/layer"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$rootfs" -cf "$work/layer/layer.tar" .
  local diff_id
  diff_id=$(sha256sum "$work/layer/layer.tar" | cut -d' ' -f1)
  printf '{"architecture":"amd64","os":"linux","config":{%s"Cmd":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$entrypoint" "$cmd" "$diff_id" >"$work/config.json"
  local config_id
  config_id=$(sha256sum "$work/config.json" | cut -d' ' -f1)
  mv "$work/config.json" "$work/$config_id.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["layer/layer.tar"]}]' "$config_id" "$ref" >"$work/manifest.json"
  mkdir -p "$(dirname "$out")"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work" -cf "$out.tmp" manifest.json "$config_id.json" layer
  mv "$out.tmp" "$out"
  rm -rf "$work"
}
