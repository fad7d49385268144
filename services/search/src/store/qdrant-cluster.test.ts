import { describe, expect, it } from "vitest";
import { clusterParams, summarize } from "./qdrant-cluster.ts";

describe("collection layout on a Qdrant cluster", () => {
  it("leaves a single server to Qdrant's defaults", () => {
    expect(clusterParams({}, 1, "data")).toEqual({});
    expect(clusterParams({}, 1, "registry")).toEqual({});
  });

  it("spreads over the peers with two copies and one acknowledging write", () => {
    expect(clusterParams({}, 3, "data")).toEqual({
      shard_number: 3,
      replication_factor: 2,
      write_consistency_factor: 1,
    });
    expect(clusterParams({}, 40, "data").shard_number).toBe(12);
    expect(clusterParams({}, 3, "registry")).toEqual({
      shard_number: 1,
      replication_factor: 2,
      write_consistency_factor: 1,
    });
  });

  it("takes what is configured, and never asks more acknowledgements than copies", () => {
    expect(clusterParams({ shardNumber: 6, replicationFactor: 3, writeConsistencyFactor: 2 }, 3, "data")).toEqual({
      shard_number: 6,
      replication_factor: 3,
      write_consistency_factor: 2,
    });
    expect(clusterParams({ replicationFactor: 1, writeConsistencyFactor: 2 }, 3, "data").write_consistency_factor).toBe(
      1,
    );
  });

  it("counts replicas by state and the shards left with no Active copy", () => {
    const s = summarize({
      shard_count: 2,
      local_shards: [{ shard_id: 0, state: "Active" }],
      remote_shards: [
        { shard_id: 0, peer_id: 2, state: "Dead" },
        { shard_id: 1, peer_id: 2, state: "Dead" },
      ],
    });
    expect(s).toEqual({ shards: 2, replicas: { Active: 1, Dead: 2 }, unavailableShards: 1, transfers: 0 });
  });
});
