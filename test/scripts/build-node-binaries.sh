#!/usr/bin/env bash
# Builds what a single-node cluster needs beyond etcd and kube-apiserver (build-kube-binaries.sh):
# kubelet, kube-proxy, kube-controller-manager and kube-scheduler (from test/kube-bin/node, the same
# k8s.io/kubernetes version as the API server), containerd v2 with its runc shim and ctr, CoreDNS,
# Traefik, kube-network-policies (NetworkPolicy enforcement), rancher's local-path-provisioner
# (dynamic PersistentVolumes on the node's disk), the CNCF distribution registry (the node's image
# and chart registry) and go-containerregistry's crane (pushes images to it), all from the Go
# module proxy, plus
# the pause image built from the kubernetes module's source (no image registry is reachable here). Idempotent: a cached binary that answers is reused.
# Writes $cache/node/current, a KEY=path file test/ground/node-binaries.ts reads.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=go-build.sh
source "$here/scripts/go-build.sh"
# Everything below runs at low priority: the machine's two cores are shared with other work.
renice -n 10 $$ >/dev/null

kube_version=$(awk '/^require k8s.io\/kubernetes/ {print $3}' "$here/kube-bin/node/go.mod")
: "${kube_version:?no k8s.io/kubernetes require line in test/kube-bin/node/go.mod}"
# Third-party daemons are built as their own main module straight from the downloaded module
# source, so their go.sum and replace directives (Traefik has several) apply exactly as upstream.
# Traefik 3.6, not 3.7: every 3.7 release replaces github.com/abbot/go-http-auth with a fork commit
# the Go module proxy does not serve (403), so 3.7 cannot build from the proxy.
containerd_version=v2.2.9
traefik_version=v3.6.12
# What kind runs to enforce NetworkPolicies (the bridge CNI ignores them): nftables rules hand each
# new connection of a pod that a policy selects to this daemon through NFQUEUE.
knp_version=v0.8.0
# What k3s and kind ship as their default StorageClass: a PersistentVolumeClaim gets a directory on
# the node, made and removed by a helper pod (the busybox image below).
lpp_version=v0.0.30
# The OCI registry the node pulls Capstan's images from and helm pulls the chart from (the same
# server a platform team runs as its in-house registry), and the client that pushes images to it.
registry_version=v3.1.2
crane_version=v0.22.1
pause_version=3.10.1
cache=${CAPSTAN_CACHE:-$HOME/.cache/capstan}
root="$cache/node"

# Where `go mod download` unpacked a module (read-only source tree; go build writes only to -o).
module_dir() { (cd "$here/kube-bin/node" && go mod download -json "$1@$2" | awk -F'"' '/"Dir"/ {print $4}'); }

ctd_out="$root/containerd-$containerd_version"
ctd_src=$(module_dir github.com/containerd/containerd/v2 "$containerd_version")
ctd_stamp="-X github.com/containerd/containerd/v2/version.Version=$containerd_version"
for c in containerd containerd-shim-runc-v2 ctr; do
  flag=--version; [ "$c" = containerd-shim-runc-v2 ] && flag=-v
  build "$c" "$ctd_src" "./cmd/$c" "$ctd_out" "$flag" "$containerd_version" "$ctd_stamp"
done

kube_out="$root/kube-$kube_version"
kube_minor=$(echo "$kube_version" | cut -d. -f2)
kv=k8s.io/component-base/version
stamp="-X $kv.gitVersion=$kube_version -X $kv.gitMajor=1 -X $kv.gitMinor=$kube_minor -X $kv.gitTreeState=clean"
for c in kubelet kube-proxy kube-scheduler kube-controller-manager; do
  # shellcheck disable=SC2086 # $stamp is several ldflags words
  build "$c" "$here/kube-bin/node" "k8s.io/kubernetes/cmd/$c" "$kube_out" --version "Kubernetes $kube_version" $stamp
done

# CoreDNS from test/kube-bin/coredns: upstream's main with only the plugins the node's Corefile
# uses, about half the packages of the full binary (773 against 1409 with the standard library).
coredns_version=$(awk '/^require github.com\/coredns\/coredns/ {print $3}' "$here/kube-bin/coredns/go.mod")
: "${coredns_version:?no github.com/coredns/coredns require line in test/kube-bin/coredns/go.mod}"
coredns_out="$root/coredns-$coredns_version-minimal"
build coredns "$here/kube-bin/coredns" . "$coredns_out" -version "CoreDNS-${coredns_version#v}"

traefik_out="$root/traefik-$traefik_version"
traefik_src=$(module_dir github.com/traefik/traefik/v3 "$traefik_version")
build traefik "$traefik_src" ./cmd/traefik "$traefik_out" version "${traefik_version#v}" \
  "-X github.com/traefik/traefik/v3/pkg/version.Version=${traefik_version#v}"

# kube-network-policies with test/kube-bin/kube-network-policies/capstan.patch applied to a copy of
# the module's source (a --kubeconfig flag for a host process, a --version flag, and the NFQUEUE
# target this kernel has in place of the nftables queue expression it lacks: the patch says why).
# The patch's hash is part of the stamped version, so a changed patch rebuilds.
knp_patch="$here/kube-bin/kube-network-policies/capstan.patch"
knp_stamp="$knp_version+capstan.$(sha256sum "$knp_patch" | cut -c1-12)"
knp_out="$root/kube-network-policies-$knp_version"
knp_src=$(mktemp -d)
cp -r "$(module_dir sigs.k8s.io/kube-network-policies "$knp_version")/." "$knp_src"
chmod -R u+w "$knp_src"
git -C "$knp_src" apply "$knp_patch"
build kube-network-policies "$knp_src" ./cmd "$knp_out" --version "$knp_stamp" "-X main.version=$knp_stamp"
rm -rf "$knp_src"

lpp_out="$root/local-path-provisioner-$lpp_version"
GOFLAGS=-mod=mod build local-path-provisioner "$(module_dir github.com/rancher/local-path-provisioner "$lpp_version")" . "$lpp_out" \
  --version "$lpp_version" "-X main.VERSION=$lpp_version"

registry_out="$root/registry-$registry_version"
GOFLAGS=-mod=mod build registry "$(module_dir github.com/distribution/distribution/v3 "$registry_version")" \
  ./cmd/registry "$registry_out" --version "$registry_version" \
  "-X github.com/distribution/distribution/v3/version.version=$registry_version"

crane_out="$root/crane-$crane_version"
GOFLAGS=-mod=mod build crane "$(module_dir github.com/google/go-containerregistry "$crane_version")" \
  ./cmd/crane "$crane_out" version "$crane_version" \
  "-X github.com/google/go-containerregistry/cmd/crane/cmd.Version=$crane_version"

# shellcheck source=image-archive.sh
source "$here/scripts/image-archive.sh"

# The pause image: the sandbox's first process, which only waits for a signal. Built from the
# kubernetes module's own build/pause source as a static binary (gcc, Debian's static libc).
images="$root/images"
pause_ref=localhost/capstan/pause:$pause_version
if [ ! -s "$images/pause-$pause_version.tar" ]; then
  k8s_src=$(module_dir k8s.io/kubernetes "$kube_version")
  rootfs=$(mktemp -d)
  gcc -Os -static -DVERSION="v$pause_version" -o "$rootfs/pause" "$k8s_src/build/pause/linux/pause.c"
  strip "$rootfs/pause"
  image_archive "$pause_ref" "$rootfs" "$images/pause-$pause_version.tar" '["/pause"]'
  rm -rf "$rootfs"
fi
echo "pause image: $images/pause-$pause_version.tar ($pause_ref)"

# A tiny workload image for the node's own smoke test: Debian's static busybox (sh, httpd, wget,
# nslookup) with one symlink per applet.
busybox_version=$(dpkg-query -W -f '${Version}' busybox-static | tr -c 'A-Za-z0-9.\n-' '-')
busybox_ref=localhost/capstan/busybox:$busybox_version
if [ ! -s "$images/busybox-$busybox_version.tar" ]; then
  rootfs=$(mktemp -d)
  mkdir -p "$rootfs/bin" "$rootfs/tmp" "$rootfs/etc" "$rootfs/www"
  cp /bin/busybox "$rootfs/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -s busybox "$rootfs/bin/$applet"
  done
  echo 'root:x:0:0:root:/:/bin/sh' >"$rootfs/etc/passwd"
  image_archive "$busybox_ref" "$rootfs" "$images/busybox-$busybox_version.tar" '["/bin/sh"]'
  rm -rf "$rootfs"
fi
echo "busybox image: $images/busybox-$busybox_version.tar ($busybox_ref)"

mkdir -p "$root"
cat >"$root/current.tmp" <<VARS
KUBE_VERSION=$kube_version
KUBELET=$kube_out/kubelet
KUBE_PROXY=$kube_out/kube-proxy
KUBE_SCHEDULER=$kube_out/kube-scheduler
KUBE_CONTROLLER_MANAGER=$kube_out/kube-controller-manager
CONTAINERD=$ctd_out/containerd
CONTAINERD_SHIM_DIR=$ctd_out
CTR=$ctd_out/ctr
COREDNS=$coredns_out/coredns
TRAEFIK=$traefik_out/traefik
KUBE_NETWORK_POLICIES=$knp_out/kube-network-policies
LOCAL_PATH_PROVISIONER=$lpp_out/local-path-provisioner
REGISTRY=$registry_out/registry
CRANE=$crane_out/crane
PAUSE_IMAGE=$pause_ref
PAUSE_ARCHIVE=$images/pause-$pause_version.tar
BUSYBOX_IMAGE=$busybox_ref
BUSYBOX_ARCHIVE=$images/busybox-$busybox_version.tar
VARS
mv "$root/current.tmp" "$root/current"
echo "NODE_BIN_FILE=$root/current"
