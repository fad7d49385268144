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
# Bridge netfilter: pod-to-pod packets on the node's bridge reach the IPv4 hooks (kube-proxy's
# conntrack, kube-network-policies) only with it on. test/ground/node-host.ts checks it at start;
# here it is turned on where it is off (a machine without Docker may boot without it).
nf=/proc/sys/net/bridge/bridge-nf-call-iptables
if [ "$(cat "$nf" 2>/dev/null)" != 1 ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd modprobe br_netfilter 2>/dev/null || true
  $sudo_cmd sysctl -q -w net.bridge.bridge-nf-call-iptables=1 || echo "[setup] node: could not turn on bridge netfilter ($nf)" >&2
else
  echo "reused: bridge netfilter is on"
fi
if [ "${CAPSTAN_SKIP_KUBE:-}" != "1" ]; then
  bash test/scripts/build-node-binaries.sh
fi
