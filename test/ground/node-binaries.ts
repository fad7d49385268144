// Where test/scripts/build-node-binaries.sh put the node's binaries and images: it writes
// <cache>/node/current, one KEY=path line each.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { binaryCacheDir, kubeBinDir } from "./kube.ts";

export interface NodeBinaries {
  kubelet: string;
  kubeProxy: string;
  kubeScheduler: string;
  kubeControllerManager: string;
  containerd: string;
  /** Directory holding containerd-shim-runc-v2 (containerd finds the shim on PATH). */
  shimDir: string;
  ctr: string;
  coredns: string;
  traefik: string;
  /** NetworkPolicy enforcement (nftables + NFQUEUE), patched to run as a host process. */
  kubeNetworkPolicies: string;
  /** Dynamic PersistentVolumes on the node's disk (node-storage.ts). */
  localPathProvisioner: string;
  /** The node's OCI registry (CNCF distribution) and the client that pushes images to it (node-registry.ts). */
  registry: string;
  crane: string;
  pauseImage: string;
  pauseArchive: string;
  /** A static busybox image for smoke tests (sh, httpd, wget, nslookup). */
  busyboxImage: string;
  busyboxArchive: string;
}

const keys: Record<keyof NodeBinaries, string> = {
  kubelet: "KUBELET",
  kubeProxy: "KUBE_PROXY",
  kubeScheduler: "KUBE_SCHEDULER",
  kubeControllerManager: "KUBE_CONTROLLER_MANAGER",
  containerd: "CONTAINERD",
  shimDir: "CONTAINERD_SHIM_DIR",
  ctr: "CTR",
  coredns: "COREDNS",
  traefik: "TRAEFIK",
  kubeNetworkPolicies: "KUBE_NETWORK_POLICIES",
  localPathProvisioner: "LOCAL_PATH_PROVISIONER",
  registry: "REGISTRY",
  crane: "CRANE",
  pauseImage: "PAUSE_IMAGE",
  pauseArchive: "PAUSE_ARCHIVE",
  busyboxImage: "BUSYBOX_IMAGE",
  busyboxArchive: "BUSYBOX_ARCHIVE",
};

const build = "run `bash test/scripts/build-node-binaries.sh` (or `npm run ground`)";

/** Reads the pointer file; throws naming what is missing. */
export function nodeBinaries(): NodeBinaries {
  const pointer = join(binaryCacheDir(), "node", "current");
  if (!existsSync(pointer)) throw new Error(`the node's binaries are not built (no ${pointer}): ${build}`);
  const vars = new Map(
    readFileSync(pointer, "utf8")
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).trim()] as const),
  );
  const out: Partial<NodeBinaries> = {};
  for (const [field, key] of Object.entries(keys) as [keyof NodeBinaries, string][]) {
    const value = vars.get(key);
    if (!value) throw new Error(`${pointer} has no ${key}: ${build}`);
    const isImageRef = field === "pauseImage" || field === "busyboxImage";
    if (!isImageRef && !existsSync(value)) throw new Error(`${key} ${value} is missing: ${build}`);
    out[field] = value;
  }
  return out as NodeBinaries;
}

/** undefined when the node can start here, else what is missing. */
export function nodeBinariesPresent(): string | undefined {
  if (!kubeBinDir()) return "etcd/kube-apiserver are not built: run `bash test/scripts/build-kube-binaries.sh`";
  try {
    nodeBinaries();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
