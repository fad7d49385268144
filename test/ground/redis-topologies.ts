// The two replicated Redis topologies teams run, from Debian's redis-server, on loopback ports, for
// the tests that need them (each test file starts its own and stops it in afterAll):
// - a Redis Cluster: three masters, one replica each (a master can fail over), node timeout 1 s;
// - a Sentinel group: one master, two replicas, three sentinels (quorum 2), down-after 1 s.
// An optional password (requirepass + masterauth, and the sentinels' auth-pass) as a Secret would set.
// The Cluster can also listen on (and announce) one more address, e.g. the e2e node's bridge
// address, so pods reach it as a Redis Cluster run outside Kubernetes.
// No persistence; every folder is a temporary one, removed by stop().
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "./process.ts";
import { redisServerArgs } from "./redis.ts";

const run = promisify(execFile);
const SERVER = process.env.REDIS_SERVER_BIN ?? "redis-server";
const CLI = process.env.REDIS_CLI_BIN ?? "redis-cli";

/** One redis-server (data node or sentinel) that can be killed and started again on its port. */
export interface RedisNode {
  port: number;
  /** SIGKILL, as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port and folder. */
  restart(): Promise<void>;
  readonly alive: boolean;
}

/** redis-cli against one node; the password goes through REDISCLI_AUTH, never on a command line. */
export async function cli(port: number, password: string | undefined, ...args: string[]): Promise<string> {
  const env = { ...process.env, ...(password ? { REDISCLI_AUTH: password } : {}) };
  const { stdout } = await run(CLI, ["-h", "127.0.0.1", "-p", String(port), ...args], { env, timeout: 10_000 });
  return stdout.trim();
}

async function answers(port: number, password?: string): Promise<boolean> {
  try {
    return (await cli(port, password, "PING")) === "PONG";
  } catch {
    return false;
  }
}

function node(
  name: string,
  port: number,
  args: () => string[],
  password?: string,
): RedisNode & { stop(): Promise<void> } {
  let proc: ManagedProcess | undefined;
  const start = async () => {
    proc = startProcess(name, SERVER, args());
    const p = proc;
    await waitFor(`${name} PING`, () => answers(port, password), { timeoutMs: 15_000, proc: p });
  };
  const alive = () => proc !== undefined && proc.child.exitCode === null && proc.child.signalCode === null;
  return {
    port,
    get alive() {
      return alive();
    },
    kill: async () => {
      if (!proc || !alive()) return;
      const exited = new Promise((r) => proc?.child.once("exit", r));
      proc.child.kill("SIGKILL");
      await exited;
    },
    restart: start,
    stop: async () => {
      if (proc && alive()) await proc.stop();
    },
    // started by the caller through restart()
  };
}

function dataArgs(port: number, dir: string, password: string | undefined, extra: string[]): string[] {
  return [
    ...redisServerArgs(port),
    "--dir",
    dir,
    ...(password ? ["--requirepass", password, "--masterauth", password] : []),
    ...extra,
  ];
}

export interface RedisClusterGround {
  /** Seed nodes as host:port (every node). */
  nodes: string[];
  all: RedisNode[];
  password: string | undefined;
  /** The node currently master of the slot of `key`. */
  masterOf(key: string): Promise<RedisNode>;
  /** Waits until every live node reports cluster_state:ok and every slot has a live master. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A Redis Cluster of `masters` masters with one replica each (node timeout `nodeTimeoutMs`). With
 * `host`, the nodes listen on it too and announce it, so their clients (and CLUSTER SLOTS) use it.
 */
/** One cluster-enabled node on ports of its own, retried on new ports when it cannot bind them. */
async function startClusterNode(
  name: string,
  dir: string,
  opts: { password?: string; nodeTimeoutMs?: number },
  announce: string[],
): Promise<RedisNode & { stop(): Promise<void> }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    // The cluster bus gets its own free port (cluster-port), not port+10000, which may not exist.
    const busPort = await freePort();
    const args = () =>
      dataArgs(port, dir, opts.password, [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        `nodes-${port}.conf`,
        "--cluster-port",
        String(busPort),
        "--cluster-node-timeout",
        String(opts.nodeTimeoutMs ?? 1000),
        // A replica of a lost master takes over however long ago it last heard from it.
        "--cluster-replica-validity-factor",
        "0",
        ...announce,
      ]);
    const n = node(name, port, args, opts.password);
    try {
      await n.restart();
      return n;
    } catch (err) {
      await n.stop();
      if (attempt >= 3 || !/Address already in use/.test(String(err))) throw err;
    }
  }
}

export async function startRedisCluster(
  opts: { masters?: number; password?: string; nodeTimeoutMs?: number; host?: string } = {},
): Promise<RedisClusterGround> {
  const masters = opts.masters ?? 3;
  const host = opts.host ?? "127.0.0.1";
  const announce = opts.host ? ["--bind", `127.0.0.1 ${opts.host}`, "--cluster-announce-ip", opts.host] : [];
  const dir = mkdtempSync(join(tmpdir(), "capstan-redis-cluster-"));
  const nodes: Array<RedisNode & { stop(): Promise<void> }> = [];
  try {
    for (let i = 0; i < masters * 2; i++) {
      // A port freePort() found free can be taken before redis binds it (another file's server, an
      // outgoing connection's ephemeral port): a node that could not bind is started again on
      // other ports, a bounded number of times.
      nodes.push(await startClusterNode(`redis-cluster-${i}`, dir, opts, announce));
    }
    const addrs = nodes.map((n) => `${host}:${n.port}`);
    await cli(
      nodes[0]?.port ?? 0,
      opts.password,
      "--cluster",
      "create",
      ...addrs,
      "--cluster-replicas",
      "1",
      "--cluster-yes",
    );
  } catch (err) {
    await Promise.allSettled(nodes.map((n) => n.stop()));
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const ground: RedisClusterGround = {
    nodes: nodes.map((n) => `${host}:${n.port}`),
    all: nodes,
    password: opts.password,
    masterOf: async (key) => {
      const live = nodes.find((n) => n.alive);
      if (!live) throw new Error("no live cluster node");
      const slot = Number(await cli(live.port, opts.password, "CLUSTER", "KEYSLOT", key));
      const shards = await cli(live.port, opts.password, "--json", "CLUSTER", "SLOTS");
      const ranges = JSON.parse(shards) as Array<[number, number, [string, number, string]]>;
      const range = ranges.find(([lo, hi]) => slot >= lo && slot <= hi);
      const port = range?.[2]?.[1];
      const n = nodes.find((x) => x.port === port);
      if (!n) throw new Error(`no master found for slot ${slot}`);
      return n;
    },
    waitHealthy: async (timeoutMs = 30_000) => {
      await waitFor(
        "redis cluster healthy",
        async () => {
          for (const n of nodes.filter((x) => x.alive)) {
            const info = await cli(n.port, opts.password, "CLUSTER", "INFO").catch(() => "");
            if (!info.includes("cluster_state:ok")) return false;
            const shards = await cli(n.port, opts.password, "--json", "CLUSTER", "SLOTS").catch(() => "[]");
            const ranges = JSON.parse(shards) as Array<[number, number, [string, number]]>;
            const ports = new Set(nodes.filter((x) => x.alive).map((x) => x.port));
            if (ranges.length === 0 || ranges.some((r) => !ports.has(r[2][1]))) return false;
          }
          return true;
        },
        { timeoutMs },
      );
    },
    stop: async () => {
      await Promise.allSettled(nodes.map((n) => n.stop()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await ground.waitHealthy();
  return ground;
}

export interface RedisSentinelGround {
  masterName: string;
  /** Sentinels as host:port. */
  sentinels: string[];
  password: string | undefined;
  data: RedisNode[];
  sentinelNodes: RedisNode[];
  /** The data node the sentinels currently name as master. */
  master(): Promise<RedisNode>;
  stop(): Promise<void>;
}

/** One master, two replicas and three sentinels (quorum 2, down-after `downAfterMs`). */
export async function startRedisSentinel(
  opts: { password?: string; masterName?: string; downAfterMs?: number } = {},
): Promise<RedisSentinelGround> {
  const masterName = opts.masterName ?? "capstan";
  const dir = mkdtempSync(join(tmpdir(), "capstan-redis-sentinel-"));
  const all: Array<RedisNode & { stop(): Promise<void> }> = [];
  const data: RedisNode[] = [];
  const sentinelNodes: RedisNode[] = [];
  try {
    const masterPort = await freePort();
    for (let i = 0; i < 3; i++) {
      const port = i === 0 ? masterPort : await freePort();
      const nodeDir = join(dir, `data-${i}`);
      mkdirSync(nodeDir);
      // A node started again after a failover comes up as it was configured; the sentinels then
      // turn it into a replica of whichever node is master by then (as with a restarted pod).
      const extra = i === 0 ? [] : ["--replicaof", "127.0.0.1", String(masterPort)];
      const n = node(`redis-data-${i}`, port, () => dataArgs(port, nodeDir, opts.password, extra), opts.password);
      all.push(n);
      data.push(n);
      await n.restart();
    }
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const conf = join(dir, `sentinel-${i}.conf`);
      writeFileSync(
        conf,
        [
          `port ${port}`,
          "bind 127.0.0.1",
          `dir ${dir}`,
          `sentinel monitor ${masterName} 127.0.0.1 ${masterPort} 2`,
          `sentinel down-after-milliseconds ${masterName} ${opts.downAfterMs ?? 1000}`,
          `sentinel failover-timeout ${masterName} 10000`,
          `sentinel parallel-syncs ${masterName} 1`,
          ...(opts.password ? [`sentinel auth-pass ${masterName} ${opts.password}`] : []),
          "",
        ].join("\n"),
        { mode: 0o600 },
      );
      const n = node(`redis-sentinel-${i}`, port, () => [conf, "--sentinel"]);
      all.push(n);
      sentinelNodes.push(n);
      await n.restart();
    }
  } catch (err) {
    await Promise.allSettled(all.map((n) => n.stop()));
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const ground: RedisSentinelGround = {
    masterName,
    sentinels: sentinelNodes.map((n) => `127.0.0.1:${n.port}`),
    password: opts.password,
    data,
    sentinelNodes,
    master: async () => {
      const s = sentinelNodes.find((n) => n.alive);
      if (!s) throw new Error("no live sentinel");
      const out = await cli(s.port, undefined, "SENTINEL", "get-master-addr-by-name", masterName);
      const port = Number(out.split("\n")[1]);
      const n = data.find((d) => d.port === port);
      if (!n) throw new Error(`sentinels name an unknown master: ${out}`);
      return n;
    },
    stop: async () => {
      await Promise.allSettled(all.map((n) => n.stop()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // Every sentinel sees both replicas and the other sentinels before a test may kill the master.
  await waitFor(
    "sentinels agree",
    async () => {
      for (const s of sentinelNodes) {
        const out = await cli(s.port, undefined, "SENTINEL", "master", masterName).catch(() => "");
        const f = out.split("\n");
        const val = (k: string) => Number(f[f.indexOf(k) + 1]);
        if (val("num-slaves") < 2 || val("num-other-sentinels") < 2) return false;
      }
      return true;
    },
    { timeoutMs: 30_000 },
  );
  return ground;
}
