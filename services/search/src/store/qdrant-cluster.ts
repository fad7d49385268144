// Qdrant as a cluster (its distributed mode, Raft between peers). Two things depend on it here:
// - how a collection is created: shard_number, replication_factor and write_consistency_factor,
//   as configured, else decided from the number of peers the server reports (clusterParams, pure);
// - what status shows: each collection's shards and the state of their replicas, as the peer we
//   talk to sees them (GET /collections/{name}/cluster), refreshed in the background and served
//   on /readyz and as a metric. A replica that is not Active does not make search unready: with a
//   replication factor of 2 the other copy answers.
import type { QdrantHttp } from "./qdrant-http.ts";

/** What the configuration says (absent: decide from the peers). */
export interface ClusterLayoutConfig {
  shardNumber?: number | undefined;
  replicationFactor?: number | undefined;
  writeConsistencyFactor?: number | undefined;
}

/** The creation parameters Qdrant takes (absent: its own defaults). */
export interface ClusterParams {
  shard_number?: number;
  replication_factor?: number;
  write_consistency_factor?: number;
}

/** More shards than this per collection only adds overhead at Capstan's sizes. */
export const MAX_AUTO_SHARDS = 12;

/**
 * The parameters of a new collection. One peer and nothing configured: Qdrant's defaults (one
 * shard, one copy). n peers: n shards (at most 12), so every peer holds a part of the data and
 * answers a part of each search; two copies of each, so the loss of one peer loses no data and no
 * answer; one acknowledging copy per write, so writes go on while a peer is down (the lost copy
 * is brought up to date by Qdrant when the peer returns). The registry (one small point per
 * knowledge base) gets one shard, copied the same way.
 */
export function clusterParams(config: ClusterLayoutConfig, peers: number, kind: "data" | "registry"): ClusterParams {
  const many = peers > 1;
  const shards = config.shardNumber ?? (many ? Math.min(peers, MAX_AUTO_SHARDS) : undefined);
  const replication = config.replicationFactor ?? (many ? Math.min(2, peers) : undefined);
  const consistency = config.writeConsistencyFactor ?? (many ? 1 : undefined);
  const out: ClusterParams = {};
  if (kind === "registry") {
    if (many || config.shardNumber !== undefined) out.shard_number = 1;
  } else if (shards !== undefined) out.shard_number = shards;
  if (replication !== undefined) out.replication_factor = replication;
  if (consistency !== undefined) out.write_consistency_factor = Math.min(consistency, replication ?? consistency);
  return out;
}

/** One collection's shards as the answering peer sees them. */
export interface CollectionClusterState {
  shards: number;
  /** Replicas by Qdrant's state name (Active, Dead, Partial, Initializing, Listener, ...). */
  replicas: Record<string, number>;
  /** Shards with no Active replica: their points cannot be read until a peer returns. */
  unavailableShards: number;
  transfers: number;
}

export interface ClusterState {
  /** "enabled" with peers, or "disabled" (a single server). */
  status: "enabled" | "disabled" | "unknown";
  peers: number;
  collections: Record<string, CollectionClusterState>;
  /** When it was read (ISO time), or why it could not be. */
  checkedAt?: string;
  error?: string;
}

interface ClusterInfo {
  status: string;
  peers?: Record<string, unknown>;
}

interface CollectionClusterInfo {
  shard_count: number;
  local_shards: Array<{ shard_id: number; state: string }>;
  remote_shards: Array<{ shard_id: number; peer_id: number; state: string }>;
  shard_transfers?: unknown[];
}

/** Pure: counts of a collection's /cluster answer. */
export function summarize(info: CollectionClusterInfo): CollectionClusterState {
  const replicas: Record<string, number> = {};
  const activeShards = new Set<number>();
  for (const r of [...info.local_shards, ...info.remote_shards]) {
    replicas[r.state] = (replicas[r.state] ?? 0) + 1;
    if (r.state === "Active") activeShards.add(r.shard_id);
  }
  return {
    shards: info.shard_count,
    replicas,
    unavailableShards: info.shard_count - activeShards.size,
    transfers: info.shard_transfers?.length ?? 0,
  };
}

export class QdrantCluster {
  private readonly http: QdrantHttp;
  private readonly config: ClusterLayoutConfig;
  private peers: Promise<number> | undefined;
  private snapshot: ClusterState = { status: "unknown", peers: 0, collections: {} };
  private readonly prefix: string;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly listeners: Array<(state: ClusterState) => void> = [];

  /** status.everyMs > 0: the state of the collections under status.prefix is read that often. */
  constructor(
    http: QdrantHttp,
    config: ClusterLayoutConfig = {},
    status: { prefix: string; everyMs?: number | undefined },
  ) {
    this.http = http;
    this.config = config;
    this.prefix = status.prefix;
    if (status.everyMs) {
      const refresh = () => void this.refresh();
      this.timer = setInterval(refresh, status.everyMs).unref();
      setImmediate(refresh);
    }
  }

  /** Called after each read of the state. */
  onRefresh(listener: (state: ClusterState) => void): void {
    this.listeners.push(listener);
  }

  /** The state as last read (status "unknown" before the first read). */
  get last(): ClusterState {
    return this.snapshot;
  }

  /** The last state read when polled; else read now. */
  current(): ClusterState | Promise<ClusterState> {
    return this.timer ? this.snapshot : this.refresh();
  }

  close(): void {
    clearInterval(this.timer);
  }

  /** Peers of the cluster (1 for a single server); asked once, again after a failure. */
  private peerCount(): Promise<number> {
    this.peers ??= this.http.call<ClusterInfo>("cluster", "GET", "cluster").then(
      (c) => (c.status === "enabled" ? Math.max(1, Object.keys(c.peers ?? {}).length) : 1),
      (err) => {
        this.peers = undefined;
        throw err;
      },
    );
    return this.peers;
  }

  async params(kind: "data" | "registry"): Promise<ClusterParams> {
    return clusterParams(this.config, await this.peerCount(), kind);
  }

  async exists(name: string): Promise<boolean> {
    return (await this.http.call<{ exists: boolean }>("exists", "GET", `collections/${name}/exists`)).exists;
  }

  /** Creates a collection laid out for the cluster; another replica creating it first (409) is fine. */
  async create(name: string, kind: "data" | "registry", body: Record<string, unknown>): Promise<void> {
    const params = await this.params(kind);
    await this.http.call("create", "PUT", `collections/${name}`, { ...body, ...params }).catch(async (err) => {
      if (!(await this.exists(name))) throw err;
    });
  }

  /** Reads the cluster and each collection's shard state (the store's collections, by prefix). */
  async refresh(): Promise<ClusterState> {
    const prefix = this.prefix;
    try {
      const info = await this.http.call<ClusterInfo>("cluster", "GET", "cluster");
      const list = await this.http.call<{ collections: Array<{ name: string }> }>("collections", "GET", "collections");
      const collections: Record<string, CollectionClusterState> = {};
      for (const { name } of list.collections.filter((c) => c.name.startsWith(`${prefix}_`))) {
        const c = await this.http.call<CollectionClusterInfo>(
          "collection_cluster",
          "GET",
          `collections/${name}/cluster`,
        );
        collections[name] = summarize(c);
      }
      this.snapshot = {
        status: info.status === "enabled" ? "enabled" : "disabled",
        peers: info.status === "enabled" ? Object.keys(info.peers ?? {}).length : 1,
        collections,
        checkedAt: new Date().toISOString(),
      };
    } catch (err) {
      this.snapshot = { ...this.snapshot, error: (err as Error).message, checkedAt: new Date().toISOString() };
    }
    for (const l of this.listeners) l(this.snapshot);
    return this.snapshot;
  }
}

interface StateGauges {
  qdrantReplicas: { reset(): void; set(labels: { state: string }, value: number): void };
  qdrantUnavailableShards: { set(value: number): void };
}

/** Keeps the replica-state gauges equal to each state read (summed over the collections). */
export function exportClusterState(cluster: QdrantCluster, gauges: StateGauges): void {
  cluster.onRefresh((state) => {
    if (state.error) return;
    const totals = new Map<string, number>();
    let unavailable = 0;
    for (const c of Object.values(state.collections)) {
      unavailable += c.unavailableShards;
      for (const [s, n] of Object.entries(c.replicas)) totals.set(s, (totals.get(s) ?? 0) + n);
    }
    gauges.qdrantReplicas.reset();
    for (const [s, n] of totals) gauges.qdrantReplicas.set({ state: s }, n);
    gauges.qdrantUnavailableShards.set(unavailable);
  });
}
