# The e2e tests' single-node cluster (test/ground/node.ts): Debian's runc, the CNI plugins (bridge,
# host-local, loopback, portmap), iptables and conntrack for kube-proxy, nftables (the harness
# removes kube-network-policies' table with `nft`), busybox-static for the smoke test's workload
# image, gcc (static libc) for the pause image; then kubelet, kube-proxy, kube-controller-manager,
# kube-scheduler, containerd, CoreDNS, Traefik and kube-network-policies from the Go module proxy
# (test/scripts/build-node-binaries.sh). Idempotent. CAPSTAN_SKIP_KUBE=1 skips the builds.
missing=()
for p in runc containernetworking-plugins iptables conntrack nftables busybox-static gcc libc6-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ "${CAPSTAN_SKIP_KUBE:-}" != "1" ]; then
  bash test/scripts/build-node-binaries.sh
fi
