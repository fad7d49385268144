// A Qdrant cluster for tests: `peers` vendored servers in distributed mode (Raft), each with its
// own HTTP, gRPC and peer-to-peer loopback ports and storage folder; the first starts the cluster,
// the others join it one at a time (--bootstrap). A peer can be killed (SIGKILL) and started
// again on the same ports and storage, as a restarted pod would be.
import { freePort } from "./ports.ts";
import { waitFor } from "./process.ts";
import { type QdrantServer, startQdrant } from "./qdrant.ts";

export interface QdrantClusterGround {
  peers: QdrantServer[];
  /** Every peer's URL, comma-separated (search's QDRANT_URL for a cluster without a Service). */
  url: string;
  /** Waits until `peer` (default: the first live one) counts `n` peers in the cluster. */
  waitPeers(n: number, peer?: QdrantServer): Promise<void>;
  stop(): Promise<void>;
}

interface ClusterInfo {
  result: { status: string; peers?: Record<string, unknown>; raft_info?: { leader?: number | null } };
}

async function peerCount(url: string): Promise<number> {
  try {
    const res = await fetch(`${url}/cluster`, { signal: AbortSignal.timeout(2000) });
    if (!res.ok) return 0;
    const body = (await res.json()) as ClusterInfo;
    return body.result.raft_info?.leader ? Object.keys(body.result.peers ?? {}).length : 0;
  } catch {
    return 0;
  }
}

/** `peers` peers on loopback, or on `host` (e.g. the e2e node's bridge address, for pods). */
export async function startQdrantCluster(opts: { peers?: number; host?: string } = {}): Promise<QdrantClusterGround> {
  const n = opts.peers ?? 3;
  const host = opts.host ?? "127.0.0.1";
  const peers: QdrantServer[] = [];
  try {
    const firstP2p = await freePort();
    for (let i = 0; i < n; i++) {
      const p2pPort = i === 0 ? firstP2p : await freePort();
      const bootstrap = i === 0 ? undefined : `http://${host}:${firstP2p}`;
      const cluster = { p2pPort, ...(bootstrap ? { bootstrap } : {}) };
      peers.push(await startQdrant({ cluster, ...(opts.host ? { host: opts.host } : {}) }));
      const first = peers[0] as QdrantServer;
      await waitFor(`qdrant peer ${i} joined`, async () => (await peerCount(first.url)) === i + 1, {
        timeoutMs: 60_000,
      });
    }
  } catch (err) {
    await Promise.allSettled(peers.map((p) => p.stop()));
    throw err;
  }
  return {
    peers,
    url: peers.map((p) => p.url).join(","),
    waitPeers: async (count, peer) => {
      const p =
        peer ?? (peers.find((x) => x.proc.child.exitCode === null && x.proc.child.signalCode === null) as QdrantServer);
      await waitFor(`qdrant cluster of ${count}`, async () => (await peerCount(p.url)) === count, {
        timeoutMs: 60_000,
      });
    },
    stop: async () => {
      await Promise.allSettled(peers.map((p) => p.stop()));
    },
  };
}
