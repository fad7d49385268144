// A real single-node Kubernetes cluster for the end-to-end tests: etcd + kube-apiserver
// (test/ground/kube.ts, in full-cluster mode), kube-controller-manager, kube-scheduler, containerd
// v2 with runc and the CNI bridge, kubelet, kube-proxy (iptables), kube-network-policies (enforces
// NetworkPolicies, which the bridge ignores), CoreDNS (cluster.local only), Traefik as the
// ingress controller, local-path-provisioner (the default StorageClass) and an OCI registry the
// node pulls images from (node-registry.ts). Every daemon runs in its own session; stop() tears them down in order and
// removes the host state the run created (docs/testing.md, "Node tier").
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRegistry } from "@capstan/shared";
import { KubeApiError, kubeConfigFromFile } from "@capstan/shared/kube";
import { binaryCacheDir, type KubeControlPlane, signCert, startKube } from "./kube.ts";
import { nodeBinaries } from "./node-binaries.ts";
import { kubeconfigText, net } from "./node-config.ts";
import {
  networkPolicyTable,
  startControllerManager,
  startCoreDns,
  startKubelet,
  startKubeProxy,
  startNetworkPolicies,
  startScheduler,
  startTraefik,
} from "./node-daemons.ts";
import {
  acquireNodeLock,
  assertBridgeNetfilter,
  assertHostFree,
  cniNetns,
  createBridge,
  killLeftovers,
  removeBridge,
  removeKubepodsCgroups,
  removeNetns,
  removeNewChains,
  removeNftTable,
  snapshotChains,
  unmountUnder,
} from "./node-host.ts";
import { type RegistryAccess, startRegistry } from "./node-registry.ts";
import { type Runtime, startRuntime } from "./node-runtime.ts";
import { startLocalStorage } from "./node-storage.ts";
import type { ManagedProcess } from "./process.ts";
import { TestKube } from "./test-kube.ts";

export { nodeBinariesPresent } from "./node-binaries.ts";

export interface Cluster {
  /** Admin kubeconfig (system:masters). */
  kubeconfig: string;
  /** API server URL, reachable from the host and from pods (the bridge's host address). */
  server: string;
  nodeName: string;
  /** Base URLs of Traefik on loopback. */
  ingress: { http: string; https: string };
  /**
   * Not set: Traefik serves each Ingress's own TLS Secret, so tests trust the CA they signed that
   * Secret with (hosts without a Secret get Traefik's self-signed default certificate).
   */
  ingressCA?: string;
  /** The node's OCI registry: images pushed there are pulled by the kubelet with a pull Secret. */
  registry: RegistryAccess;
  /** A docker-archive or OCI archive, imported into containerd's k8s.io namespace (what the kubelet sees). */
  importImage(archivePath: string): Promise<void>;
  listImages(): Promise<string[]>;
  stop(): Promise<void>;
}

const nodeName = "capstan-node";

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (${last})` : ""}`);
}

/** The certificates the node adds to the control plane's CA; returns the API server's flags for them. */
function nodeCerts(certDir: string): string[] {
  signCert(certDir, "node", `/CN=system:node:${nodeName}/O=system:nodes`, "extendedKeyUsage=clientAuth\n");
  // The API server's client identity toward the kubelet (logs, exec, port-forward).
  signCert(
    certDir,
    "kubelet-client",
    "/CN=kube-apiserver-kubelet-client/O=system:masters",
    "extendedKeyUsage=clientAuth\n",
  );
  return [
    `--kubelet-client-certificate=${join(certDir, "kubelet-client.crt")}`,
    `--kubelet-client-key=${join(certDir, "kubelet-client.key")}`,
    "--kubelet-preferred-address-types=InternalIP,Hostname",
  ];
}

export async function startCluster(opts: { dir?: string } = {}): Promise<Cluster> {
  const bin = nodeBinaries();
  assertHostFree();
  assertBridgeNetfilter();
  // Held until stop() has removed everything; a second run fails here, before touching the host.
  const release = acquireNodeLock();
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "capstan-node-"));
  mkdirSync(dir, { recursive: true });
  const chainsBefore = snapshotChains();
  const netnsBefore = cniNetns();

  // Teardown steps, registered as each piece starts; stop() runs them in the documented order.
  let kube: KubeControlPlane | undefined;
  let runtime: Runtime | undefined;
  const procs: Record<string, ManagedProcess | undefined> = {};
  let client: TestKube | undefined;
  let traefikDir: string | undefined;

  const stop = async () => {
    const step = async (what: string, fn: () => Promise<unknown> | unknown) => {
      try {
        await fn();
      } catch (err) {
        console.warn(`[node] teardown: ${what}: ${(err as Error).message}`);
      }
    };
    // Controllers first, so the pods deleted next are neither replaced nor scheduled again.
    await step("stop controllers", () =>
      Promise.all([procs["kube-controller-manager"]?.stop(), procs["kube-scheduler"]?.stop()]),
    );
    // Pods deleted through the API while the kubelet runs: it stops them through the runtime,
    // so CNI releases addresses and iptables rules and volumes are unmounted.
    if (client && procs.kubelet) await step("delete pods", () => deleteAllPods(client as TestKube));
    for (const name of [
      "local-path-provisioner",
      "registry",
      "kubelet",
      "kube-proxy",
      "coredns",
      "traefik",
      "kube-network-policies",
    ])
      await step(name, () => procs[name]?.stop());
    if (runtime) {
      await step("remove containers", () => runtime?.removeAllContainers());
      await step("containerd", () => runtime?.proc.stop());
    }
    await step("control plane", () => kube?.stop());
    await step("host state", async () => {
      killLeftovers(join(dir, "containerd"));
      await new Promise((r) => setTimeout(r, 200));
      unmountUnder(dir);
      removeNetns([...cniNetns()].filter((n) => !netnsBefore.has(n)));
      removeNewChains(chainsBefore);
      removeNftTable(networkPolicyTable);
      removeBridge();
      removeKubepodsCgroups();
      rmSync(dir, { recursive: true, force: true });
      if (traefikDir) rmSync(traefikDir, { recursive: true, force: true });
    });
    await step("node lock", release);
  };

  try {
    // A table left by a run that died would queue pod traffic to nobody.
    removeNftTable(networkPolicyTable);
    createBridge();
    kube = await startKube({
      address: net.hostIp,
      serviceCidr: net.serviceCidr,
      extraSans: [
        `IP:${net.hostIp}`,
        `IP:${net.kubernetesServiceIp}`,
        "DNS:kubernetes",
        "DNS:kubernetes.default",
        "DNS:kubernetes.default.svc",
        `DNS:kubernetes.default.svc.${net.clusterDomain}`,
      ],
      cluster: true,
      detached: true,
      prepare: nodeCerts,
    });
    const certDir = kube.dir;
    client = new TestKube(kubeConfigFromFile(kube.kubeconfig), createRegistry({ defaultMetrics: false }));
    procs["kube-controller-manager"] = startControllerManager(bin, kube.kubeconfig, certDir);
    procs["kube-scheduler"] = startScheduler(bin, kube.kubeconfig);

    runtime = await startRuntime(bin, dir, join(binaryCacheDir(), "node", "containerd-root"));
    await runtime.importImage(bin.pauseArchive);
    const registry = await startRegistry({ bin, dir, certDir, hostsDir: runtime.registryHostsDir });
    procs.registry = registry.proc;

    const nodeKubeconfig = join(dir, "node.kubeconfig");
    writeFileSync(
      nodeKubeconfig,
      kubeconfigText(kube.server, join(certDir, "ca.crt"), join(certDir, "node.crt"), join(certDir, "node.key")),
      { mode: 0o600 },
    );
    procs.kubelet = await startKubelet({
      bin,
      dir,
      nodeName,
      kubeconfig: nodeKubeconfig,
      caFile: join(certDir, "ca.crt"),
      socket: runtime.socket,
    });
    const [proxy, policies, dns, traefik] = await Promise.all([
      startKubeProxy({ bin, dir, nodeName, kubeconfig: kube.kubeconfig }),
      startNetworkPolicies({ bin, nodeName, kubeconfig: kube.kubeconfig }),
      startCoreDns(bin, dir, kube.kubeconfig),
      startTraefik(bin, kube.kubeconfig),
    ]);
    procs["kube-proxy"] = proxy;
    procs["kube-network-policies"] = policies;
    procs.coredns = dns;
    procs.traefik = traefik.proc;
    traefikDir = traefik.dir;
    await createIngressClass(client);
    procs["local-path-provisioner"] = await startLocalStorage({ bin, client, kubeconfig: kube.kubeconfig, dir });
    await until(`node ${nodeName} Ready`, 60_000, () => nodeReady(client as TestKube));
    // Pods are refused until the default ServiceAccount exists (ServiceAccount admission).
    await until("ServiceAccount default/default", 60_000, async () => {
      await (client as TestKube).json("/api/v1/namespaces/default/serviceaccounts/default");
      return true;
    });
    const rt = runtime;
    return {
      kubeconfig: kube.kubeconfig,
      server: kube.server,
      nodeName,
      ingress: { http: traefik.http, https: traefik.https },
      registry: {
        host: registry.host,
        caFile: registry.caFile,
        username: registry.username,
        password: registry.password,
      },
      importImage: (archive) => rt.importImage(archive),
      listImages: () => rt.listImages(),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function nodeReady(client: TestKube): Promise<boolean> {
  const node = await client.json<{ status?: { conditions?: { type: string; status: string }[] } }>(
    `/api/v1/nodes/${nodeName}`,
  );
  return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/** IngressClass `traefik` (the cluster's default), the class Traefik's provider watches for. */
async function createIngressClass(client: TestKube): Promise<void> {
  try {
    await client.json("/apis/networking.k8s.io/v1/ingressclasses", {
      method: "POST",
      body: {
        apiVersion: "networking.k8s.io/v1",
        kind: "IngressClass",
        metadata: { name: "traefik", annotations: { "ingressclass.kubernetes.io/is-default-class": "true" } },
        spec: { controller: "traefik.io/ingress-controller" },
      },
    });
  } catch (err) {
    if (!(err instanceof KubeApiError) || err.status !== 409) throw err;
  }
}

/** Deletes every pod (1 s grace) and waits until the kubelet has removed them all (bounded). */
async function deleteAllPods(client: TestKube): Promise<void> {
  const nsList = await client.json<{ items: { metadata: { name: string } }[] }>("/api/v1/namespaces");
  for (const ns of nsList.items) {
    await client.json(`/api/v1/namespaces/${ns.metadata.name}/pods`, {
      method: "DELETE",
      query: { gracePeriodSeconds: 1 },
    });
  }
  await until("every pod removed by the kubelet", 60_000, async () => {
    const pods = await client.json<{ items: unknown[] }>("/api/v1/pods");
    return pods.items.length === 0;
  });
}
