// The node's daemons other than containerd, each started in its own session and waited for until
// it serves: kube-controller-manager, kube-scheduler, kubelet, kube-proxy, CoreDNS, Traefik and
// kube-network-policies.
import { chownSync, copyFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fetch } from "undici";
import type { NodeBinaries } from "./node-binaries.ts";
import { corefile, kubeletConfig, kubeProxyConfig, net } from "./node-config.ts";
import { nfqueueBound, nftTableExists } from "./node-host.ts";
import { freePort } from "./ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "./process.ts";

const daemon = (name: string, cmd: string, args: string[], env?: NodeJS.ProcessEnv) =>
  startProcess(name, cmd, args, env, { detached: true });

/** True when GET url answers 200 within two seconds. */
async function ok200(url: string): Promise<boolean> {
  return (await fetch(url, { signal: AbortSignal.timeout(2000) })).status === 200;
}

/**
 * kube-controller-manager with the service-account token controller (signing key + root CA), so
 * pods get in-cluster credentials. No serving port: nothing scrapes it here.
 */
export function startControllerManager(bin: NodeBinaries, kubeconfig: string, certDir: string): ManagedProcess {
  return daemon("kube-controller-manager", bin.kubeControllerManager, [
    `--kubeconfig=${kubeconfig}`,
    `--service-account-private-key-file=${join(certDir, "sa.key")}`,
    `--root-ca-file=${join(certDir, "ca.crt")}`,
    "--use-service-account-credentials=false",
    "--leader-elect=false",
    "--secure-port=0",
    "--controllers=*",
    "--v=0",
  ]);
}

export function startScheduler(bin: NodeBinaries, kubeconfig: string): ManagedProcess {
  return daemon("kube-scheduler", bin.kubeScheduler, [
    `--kubeconfig=${kubeconfig}`,
    "--leader-elect=false",
    "--secure-port=0",
    "--v=0",
  ]);
}

/** The kubelet, registered with its node certificate; returns once its healthz answers. */
export async function startKubelet(o: {
  bin: NodeBinaries;
  dir: string;
  nodeName: string;
  kubeconfig: string;
  caFile: string;
  socket: string;
}): Promise<ManagedProcess> {
  const healthzPort = await freePort();
  const config = join(o.dir, "kubelet-config.yaml");
  writeFileSync(
    config,
    kubeletConfig({ caFile: o.caFile, socket: o.socket, podLogsDir: join(o.dir, "pod-logs"), healthzPort }),
  );
  const proc = daemon(
    "kubelet",
    o.bin.kubelet,
    [
      `--config=${config}`,
      `--kubeconfig=${o.kubeconfig}`,
      `--root-dir=${join(o.dir, "kubelet")}`,
      `--cert-dir=${join(o.dir, "kubelet-pki")}`,
      `--hostname-override=${o.nodeName}`,
      `--node-ip=${net.hostIp}`,
      "--v=0",
    ],
    { ...process.env, PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
  );
  await waitFor("kubelet /healthz", () => ok200(`http://127.0.0.1:${healthzPort}/healthz`), {
    timeoutMs: 60_000,
    proc,
  });
  return proc;
}

export async function startKubeProxy(o: {
  bin: NodeBinaries;
  dir: string;
  nodeName: string;
  kubeconfig: string;
}): Promise<ManagedProcess> {
  const [healthzPort, metricsPort] = [await freePort(), await freePort()];
  const config = join(o.dir, "kube-proxy-config.yaml");
  writeFileSync(config, kubeProxyConfig({ kubeconfig: o.kubeconfig, nodeName: o.nodeName, healthzPort, metricsPort }));
  const proc = daemon("kube-proxy", o.bin.kubeProxy, [`--config=${config}`, "--v=0"], {
    ...process.env,
    PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
  });
  // healthz answers 200 once the first full sync of the rules is done.
  await waitFor("kube-proxy /healthz", () => ok200(`http://127.0.0.1:${healthzPort}/healthz`), {
    timeoutMs: 60_000,
    proc,
  });
  return proc;
}

/** CoreDNS on the bridge's host address, port 53 (pods' resolv.conf cannot name another port). */
export async function startCoreDns(bin: NodeBinaries, dir: string, kubeconfig: string): Promise<ManagedProcess> {
  const readyPort = await freePort();
  const conf = join(dir, "Corefile");
  writeFileSync(conf, corefile({ kubeconfig, readyPort }));
  const proc = daemon("coredns", bin.coredns, ["-conf", conf]);
  // /ready answers 200 once the kubernetes plugin has synced its caches from the API.
  await waitFor("CoreDNS /ready", () => ok200(`http://127.0.0.1:${readyPort}/ready`), { timeoutMs: 60_000, proc });
  return proc;
}

export interface Ingress {
  proc: ManagedProcess;
  http: string;
  https: string;
  /** Holds Traefik's copy of the kubeconfig; removed at stop. */
  dir: string;
}

/**
 * The uid Traefik runs as: not root, so its connections to pods are subject to NetworkPolicies
 * from the node's address (kube-network-policies lets every connection a root process on the node
 * opens through, as the NetworkPolicy API says traffic from a pod's own node is; an unprivileged
 * Traefik stands for a host-network controller on another node). No other process uses this uid,
 * so the kubeconfig it may read is readable by root and Traefik only.
 */
export const traefikUid = 64_101;

/**
 * Traefik v3 with the Kubernetes Ingress provider, reading through a copy of the admin kubeconfig
 * (KUBECONFIG) owned by its uid, serving HTTP and HTTPS on free loopback ports. Certificates come
 * from each Ingress's TLS Secret; hosts without one get Traefik's self-signed default certificate.
 */
export async function startTraefik(bin: NodeBinaries, kubeconfig: string): Promise<Ingress> {
  const [web, websecure, ping] = [await freePort(), await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), "capstan-traefik-"));
  const ownKubeconfig = join(dir, "kubeconfig");
  copyFileSync(kubeconfig, ownKubeconfig);
  chownSync(ownKubeconfig, traefikUid, traefikUid);
  chownSync(dir, traefikUid, traefikUid);
  const proc = daemon(
    "traefik",
    "setpriv",
    [
      `--reuid=${traefikUid}`,
      `--regid=${traefikUid}`,
      "--clear-groups",
      "--inh-caps=-all",
      bin.traefik,
      `--entryPoints.web.address=127.0.0.1:${web}`,
      `--entryPoints.websecure.address=127.0.0.1:${websecure}`,
      // Every router on websecure is a TLS router: an Ingress's TLS section alone leaves Traefik
      // serving the Secret's certificate but answering 404 over HTTPS.
      "--entryPoints.websecure.http.tls=true",
      `--entryPoints.ping.address=127.0.0.1:${ping}`,
      "--ping=true",
      "--ping.entryPoint=ping",
      "--providers.kubernetesingress=true",
      "--global.checkNewVersion=false",
      "--global.sendAnonymousUsage=false",
      "--log.level=WARN",
    ],
    { ...process.env, KUBECONFIG: ownKubeconfig, HOME: dir },
  );
  await waitFor("Traefik /ping", () => ok200(`http://127.0.0.1:${ping}/ping`), { timeoutMs: 60_000, proc });
  return { proc, http: `http://127.0.0.1:${web}`, https: `https://127.0.0.1:${websecure}`, dir };
}

/** The nftables table kube-network-policies keeps its rules in (inet family; upstream's default name). */
export const networkPolicyTable = "kube-network-policies";
/** The NFQUEUE number its rules send packets to and it listens on (upstream's default). */
const networkPolicyQueue = 100;

/**
 * kube-network-policies (built by test/scripts/build-node-binaries.sh with
 * test/kube-bin/kube-network-policies/capstan.patch) as a host process with the admin kubeconfig,
 * like kube-proxy. Its nftables rules in POSTROUTING (before kube-proxy's masquerade) hand the
 * first packet of each new connection from or to a pod that a NetworkPolicy selects to it through
 * NFQUEUE, and it accepts or drops the packet by the policies. The bridge's own pod-to-pod traffic
 * reaches those hooks through bridge netfilter (node-host.ts checks it is on). Returns once its
 * table is in place (after its caches synced) and it listens on the queue.
 */
export async function startNetworkPolicies(o: {
  bin: NodeBinaries;
  nodeName: string;
  kubeconfig: string;
}): Promise<ManagedProcess> {
  const metricsPort = await freePort();
  const proc = daemon("kube-network-policies", o.bin.kubeNetworkPolicies, [
    `--kubeconfig=${o.kubeconfig}`,
    `--hostname-override=${o.nodeName}`,
    `--metrics-bind-address=127.0.0.1:${metricsPort}`,
    `--nfqueue-id=${networkPolicyQueue}`,
    // A workaround for a conntrack race fixed in kernel 6.12 (upstream's flag says so); without
    // it DNS from pods to the node's CoreDNS is never queued, like the rest of pod-to-node traffic.
    "--netfilter-bug-1766-fix=false",
    "--v=0",
  ]);
  await waitFor(
    "kube-network-policies' nftables table and queue",
    async () => nftTableExists(networkPolicyTable) && nfqueueBound(networkPolicyQueue),
    { timeoutMs: 60_000, proc },
  );
  return proc;
}
