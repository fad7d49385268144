// Host-wide state of the single-node cluster: the bridge, iptables chains, kube-network-policies'
// nftables table, mounts, network namespaces and cgroups it creates. One node per machine: starting refuses where another kubelet
// runs; stopping removes exactly what this run created (chains that existed before, such as
// podman's CNI-FORWARD, are left alone).
import { execFileSync } from "node:child_process";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmdirSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { net } from "./node-config.ts";

function run(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 30_000 });
}

function tryRun(cmd: string, args: string[]): void {
  try {
    run(cmd, args);
  } catch {
    // best effort: the object may already be gone
  }
}

/** Processes whose command name is `name` (from /proc, no pgrep dependency). */
export function processesNamed(name: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() === name) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/** Throws a clear error when this machine cannot host the node (another kubelet, not root). */
export function assertHostFree(): void {
  if (process.getuid?.() !== 0) throw new Error("the node tier needs root (bridge, iptables, mounts, cgroups)");
  const kubelets = processesNamed("kubelet");
  if (kubelets.length > 0)
    throw new Error(
      `a kubelet already runs on this machine (pid ${kubelets.join(", ")}): one node per machine, ` +
        "since it owns the bridge, iptables, the kubepods cgroup and ports 10250/10248",
    );
}

const lockFile = "/run/capstan-node.lock";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Takes the machine's node lock (a file holding the owner's pid) so two runs starting at the same
 * moment cannot both pass the kubelet check and then tear down each other's bridge and chains. A
 * lock whose owner died is taken over. Returns the release function.
 */
export function acquireNodeLock(): () => void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockFile, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        if (readFileSync(lockFile, "utf8").trim() === String(process.pid)) unlinkSync(lockFile);
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const owner = Number(readFileSync(lockFile, "utf8").trim());
      if (owner && alive(owner))
        throw new Error(`another run's node (pid ${owner}, ${lockFile}) is starting or running: one node per machine`);
      unlinkSync(lockFile);
    }
  }
  throw new Error(`could not take ${lockFile}`);
}

/** Chain names per command and table, to tell this run's chains from ones that existed before. */
export type ChainSnapshot = Record<string, Set<string>>;
// The kubelet and kube-proxy create chains for both address families.
const commands = ["iptables", "ip6tables"];
const tables = ["filter", "nat", "mangle"];

function chainsOf(cmd: string, table: string): { chains: string[]; rules: string[] } {
  const rules = run(cmd, ["-t", table, "-S"]).split("\n");
  return { chains: rules.filter((l) => l.startsWith("-N ")).map((l) => l.slice(3).trim()), rules };
}

/**
 * KUBE-* chains are never recorded as pre-existing: with no other kubelet on the machine (checked
 * first), any found belong to an earlier run that died, and this run's stop() removes them too.
 */
export function snapshotChains(): ChainSnapshot {
  const snap: ChainSnapshot = {};
  for (const cmd of commands)
    for (const t of tables)
      snap[`${cmd} ${t}`] = new Set(chainsOf(cmd, t).chains.filter((c) => !c.startsWith("KUBE-")));
  return snap;
}

/** Deletes the KUBE-* and CNI-* chains absent from `before`, and every rule that jumps to them. */
export function removeNewChains(before: ChainSnapshot): void {
  for (const cmd of commands) {
    for (const t of tables) {
      const { chains, rules } = chainsOf(cmd, t);
      const created = chains.filter((c) => /^(KUBE|CNI)-/.test(c) && !before[`${cmd} ${t}`]?.has(c));
      if (created.length === 0) continue;
      const doomed = new Set(created);
      // Rules in surviving chains that jump into a doomed chain: deleted by their own spec
      // (iptables -S prints them shell-quoted, hence sh -c).
      for (const rule of rules) {
        const m = /^-A (\S+) (?:.* )?-j (\S+)/.exec(rule);
        if (!m || !doomed.has(m[2] as string) || doomed.has(m[1] as string)) continue;
        tryRun("sh", ["-c", `${cmd} -t ${t} -D ${rule.slice(3)}`]);
      }
      for (const c of created) tryRun(cmd, ["-t", t, "-F", c]);
      for (const c of created) tryRun(cmd, ["-t", t, "-X", c]);
    }
  }
}

/** True when the nftables table `inet <name>` exists. */
export function nftTableExists(name: string): boolean {
  try {
    run("nft", ["list", "table", "inet", name]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Deletes the nftables table `inet <name>` if present. kube-network-policies removes its table
 * only on SIGINT; stopped with SIGTERM (or dead), it leaves rules that queue pod traffic to a
 * queue nobody reads, which the kernel drops.
 */
export function removeNftTable(name: string): void {
  if (nftTableExists(name)) tryRun("nft", ["delete", "table", "inet", name]);
}

/** True when a process listens on NFQUEUE `queue` (/proc/net/netfilter/nfnetlink_queue lists bound queues). */
export function nfqueueBound(queue: number): boolean {
  const path = "/proc/net/netfilter/nfnetlink_queue";
  if (!existsSync(path)) return false;
  return readFileSync(path, "utf8")
    .split("\n")
    .some((l) => l.trim().split(/\s+/)[0] === String(queue));
}

/**
 * Pods on the bridge talk to each other at layer 2: only with bridge netfilter on do those
 * packets cross the IPv4 hooks where kube-proxy's conntrack undoes a Service's DNAT on the reply
 * and kube-network-policies sees them. Throws when it is off (a host-wide setting this harness
 * does not change).
 */
export function assertBridgeNetfilter(): void {
  const path = "/proc/sys/net/bridge/bridge-nf-call-iptables";
  const value = existsSync(path) ? readFileSync(path, "utf8").trim() : "absent";
  if (value !== "1")
    throw new Error(
      `${path} is ${value}: the node needs bridge netfilter (modprobe br_netfilter; sysctl -w net.bridge.bridge-nf-call-iptables=1)`,
    );
}

/** The bridge with the host address, made before the API server binds that address. */
export function createBridge(): void {
  if (!existsSync(`/sys/class/net/${net.bridge}`)) run("ip", ["link", "add", net.bridge, "type", "bridge"]);
  const addrs = run("ip", ["-o", "-4", "addr", "show", "dev", net.bridge]);
  if (!addrs.includes(`${net.hostIp}/`)) run("ip", ["addr", "add", `${net.hostIp}/16`, "dev", net.bridge]);
  run("ip", ["link", "set", net.bridge, "up"]);
  // Service addresses route to the bridge too: a packet to a ClusterIP that kube-proxy has not
  // rewritten yet stays on the machine instead of leaving by the default route.
  run("ip", ["route", "replace", net.serviceCidr, "dev", net.bridge]);
}

export function removeBridge(): void {
  if (existsSync(`/sys/class/net/${net.bridge}`)) tryRun("ip", ["link", "del", net.bridge]);
}

/** Mount points under `dir` (deepest first), from /proc/self/mountinfo. */
export function mountsUnder(dir: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => (l.split(" ")[4] ?? "").replace(/\\040/g, " "))
    .filter((m) => m === dir || m.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

export function unmountUnder(dir: string): void {
  for (const m of mountsUnder(dir)) tryRun("umount", ["-l", m]);
}

/** Network namespaces named by CNI (cni-*) under /run/netns; compare before/after a run. */
export function cniNetns(): Set<string> {
  const d = "/run/netns";
  return new Set(existsSync(d) ? readdirSync(d).filter((n) => n.startsWith("cni-")) : []);
}

export function removeNetns(names: Iterable<string>): void {
  for (const n of names) tryRun("ip", ["netns", "delete", n]);
}

/**
 * Last-resort sweep when the runtime could not stop everything: SIGKILL to every process in the
 * kubelet's `kubepods` cgroups and to every process whose command line names the run's containerd
 * directory (the shims carry its socket path).
 */
export function killLeftovers(containerdDir: string): void {
  const pids = new Set<number>();
  const collect = (path: string) => {
    for (const e of readdirSync(path, { withFileTypes: true })) if (e.isDirectory()) collect(join(path, e.name));
    for (const pid of readFileSync(join(path, "cgroup.procs"), "utf8").split("\n").filter(Boolean))
      pids.add(Number(pid));
  };
  const kubepods = "/sys/fs/cgroup/pids/kubepods";
  if (existsSync(kubepods)) collect(kubepods);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(`${containerdDir}/`)) pids.add(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // exited meanwhile
    }
  }
}

/** Removes the kubelet's `kubepods` cgroup tree in every v1 hierarchy (leaves first). */
export function removeKubepodsCgroups(): void {
  const root = "/sys/fs/cgroup";
  const removeTree = (path: string) => {
    for (const e of readdirSync(path, { withFileTypes: true })) if (e.isDirectory()) removeTree(join(path, e.name));
    try {
      rmdirSync(path);
    } catch {
      // a process still in it, or already gone
    }
  };
  for (const hierarchy of existsSync(root) ? readdirSync(root) : []) {
    const kp = join(root, hierarchy, "kubepods");
    if (existsSync(kp)) removeTree(kp);
  }
}
