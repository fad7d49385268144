# Container images (scripts/images/build.sh): Debian's buildah builds the Dockerfile without a Docker
# engine, mmdebstrap makes the local base from Debian packages (no image registry is reachable here),
# podman runs the smoke checks, skopeo validates the archives, runc is the OCI runtime.
set -euo pipefail
source "$(dirname "$0")/../lib/apt.sh"
apt_install_missing buildah podman mmdebstrap skopeo runc uidmap xz-utils
# crun (Debian's default for podman) cannot create containers on this machine's cgroups v1 hybrid
# layout; runc can. The scripts pass --runtime runc anyway; this makes plain podman/buildah agree.
# Root reads /etc/containers/containers.conf, other users their own; an existing file is left alone.
conf=/etc/containers/containers.conf
[ "$(id -u)" -eq 0 ] || conf="${XDG_CONFIG_HOME:-$HOME/.config}/containers/containers.conf"
if [ ! -e "$conf" ]; then
  mkdir -p "$(dirname "$conf")"
  printf '# Written by Capstan scripts/setup.d/30-images.sh: crun fails on cgroups v1 hybrid hosts.\n[engine]\nruntime = "runc"\n' >"$conf"
elif ! grep -qs '^runtime *= *"runc"' "$conf"; then
  echo "[setup] images: $conf exists without runtime = \"runc\"; podman may pick crun (pass --runtime runc)" >&2
fi
