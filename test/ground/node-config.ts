// Configuration files of the single-node cluster's daemons (test/ground/node.ts), as text.
// Addresses all come from 198.18.0.0/15 (a range reserved for benchmarking, never routed):
// pods on the bridge 198.18.0.0/16, Services 198.19.0.0/16.
import { readFileSync } from "node:fs";

export const net = {
  bridge: "capstan0",
  /** The bridge's host address: pods' gateway, where the API server and CoreDNS listen. */
  hostIp: "198.18.0.1",
  podCidr: "198.18.0.0/16",
  serviceCidr: "198.19.0.0/16",
  /** The `kubernetes` Service's ClusterIP (the first address of the Service range). */
  kubernetesServiceIp: "198.19.0.1",
  clusterDomain: "cluster.local",
} as const;

/** A kubeconfig with the CA and a client certificate embedded (admin, node, ...). */
export function kubeconfigText(server: string, caFile: string, certFile: string, keyFile: string): string {
  const b64 = (f: string) => readFileSync(f).toString("base64");
  return `apiVersion: v1
kind: Config
clusters:
- name: capstan-node
  cluster:
    server: ${server}
    certificate-authority-data: ${b64(caFile)}
users:
- name: user
  user:
    client-certificate-data: ${b64(certFile)}
    client-key-data: ${b64(keyFile)}
contexts:
- name: capstan-node
  context: {cluster: capstan-node, user: user, namespace: default}
current-context: capstan-node
`;
}

/**
 * containerd v2 (config version 3). restrict_oom_score_adj: this machine cannot lower OOM scores
 * (no CAP_SYS_RESOURCE), and runc fails every sandbox that asks for a lower one. The sandbox
 * image is the locally built pause image, pinned so the kubelet's image GC never removes it.
 * Registries are configured per host in registryHostsDir (the node's registry: node-registry.ts).
 */
export function containerdConfig(o: {
  root: string;
  state: string;
  socket: string;
  pauseImage: string;
  cniConfDir: string;
  /** Per-registry host configuration (hosts.toml files), as /etc/containerd/certs.d on a node. */
  registryHostsDir: string;
}): string {
  const cri = "io.containerd.cri.v1";
  return `version = 3
root = "${o.root}"
state = "${o.state}"
[grpc]
  address = "${o.socket}"
[ttrpc]
  address = "${o.socket}.ttrpc"
[debug]
  level = "warn"
[plugins."${cri}.images"]
  snapshotter = "overlayfs"
  [plugins."${cri}.images".pinned_images]
    sandbox = "${o.pauseImage}"
  [plugins."${cri}.images".registry]
    config_path = "${o.registryHostsDir}"
[plugins."${cri}.runtime"]
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins."${cri}.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."${cri}.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."${cri}.runtime".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        SystemdCgroup = false
  [plugins."${cri}.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "${o.cniConfDir}"
`;
}

/** CNI: a bridge with host-local addresses (state kept in the run's directory) and portmap. */
export function cniConfList(ipamDataDir: string): string {
  return JSON.stringify(
    {
      cniVersion: "1.0.0",
      name: "capstan",
      plugins: [
        {
          type: "bridge",
          bridge: net.bridge,
          isGateway: true,
          ipMasq: true,
          hairpinMode: true,
          ipam: {
            type: "host-local",
            dataDir: ipamDataDir,
            ranges: [[{ subnet: net.podCidr, gateway: net.hostIp }]],
            routes: [{ dst: "0.0.0.0/0" }],
          },
        },
        { type: "portmap", capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  );
}

/**
 * kubelet: cgroupfs driver and failCgroupV1 off (this machine has cgroups v1 hybrid), webhook
 * authn/z off (clients are authenticated by certificates from the run's CA), eviction thresholds
 * low so a full-ish disk does not taint the only node, fast status updates so it goes Ready fast.
 */
export function kubeletConfig(o: { caFile: string; socket: string; podLogsDir: string; healthzPort: number }): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
address: ${net.hostIp}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${o.healthzPort}
containerRuntimeEndpoint: unix://${o.socket}
imageServiceEndpoint: unix://${o.socket}
podLogsDir: ${o.podLogsDir}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: ${o.caFile}}
authorization: {mode: AlwaysAllow}
clusterDomain: ${net.clusterDomain}
clusterDNS: [${net.hostIp}]
resolvConf: ""
staticPodPath: ""
rotateCertificates: false
serverTLSBootstrap: false
nodeStatusUpdateFrequency: 2s
nodeStatusReportFrequency: 10s
syncFrequency: 5s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "50Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
evictionPressureTransitionPeriod: 5s
maxPods: 110
`;
}

/**
 * kube-proxy in iptables mode. conntrack sizes/timeouts left as the host has them (0 = unchanged),
 * so kube-proxy writes no sysctls the machine does not allow. No masqueradeAll: a pod calling a
 * Service keeps its own address, as in most clusters, so a backend (search's allow-lists, its
 * trusted proxies) sees which pod called; the reply from a backend on the same bridge has its
 * DNAT undone through bridge netfilter, which the node requires (node-host.ts).
 */
export function kubeProxyConfig(o: {
  kubeconfig: string;
  nodeName: string;
  healthzPort: number;
  metricsPort: number;
}): string {
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: ${net.podCidr}
hostnameOverride: ${o.nodeName}
clientConnection: {kubeconfig: ${o.kubeconfig}}
healthzBindAddress: 127.0.0.1:${o.healthzPort}
metricsBindAddress: 127.0.0.1:${o.metricsPort}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {masqueradeAll: false, syncPeriod: 30s, minSyncPeriod: 0s}
`;
}

/**
 * CoreDNS answers only cluster.local (and reverse lookups of cluster addresses) from the API,
 * on the bridge's host address (pods' resolv.conf points there). No `.` zone and no forward
 * plugin: other names are REFUSED, nothing leaves the machine.
 */
export function corefile(o: { kubeconfig: string; readyPort: number }): string {
  return `${net.clusterDomain}:53 in-addr.arpa:53 ip6.arpa:53 {
    bind ${net.hostIp}
    errors
    ready 127.0.0.1:${o.readyPort}
    kubernetes ${net.clusterDomain} in-addr.arpa ip6.arpa {
        kubeconfig ${o.kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
}
`;
}
