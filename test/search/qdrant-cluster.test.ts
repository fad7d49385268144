// Search on a three-peer Qdrant cluster (the vendored binary in distributed mode), given every
// peer's URL as a Kubernetes-less deployment would: collections are created with one shard per
// peer, two copies each and one acknowledging write; /readyz shows the shards and their replicas'
// states. Then the peer search talks to is killed (SIGKILL) while one loop searches and another
// ingests documents: no search fails, every acknowledged document is there, and the peer, started
// again, rejoins with its shards Active and holding what was written while it was away.
// Figures (searches, writes, slowest answer during the fault) printed for docs/benchmarks.md.
// Run: npm exec -- vitest run --project integration test/search/qdrant-cluster.test.ts
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SearchResult } from "../../services/search/src/index.ts";
import { qdrantPrefix } from "../ground/qdrant.ts";
import { type QdrantClusterGround, startQdrantCluster } from "../ground/qdrant-cluster.ts";
import { HANDBOOK } from "./corpus.ts";
import {
  call,
  INTERNAL_TOKEN,
  ingest,
  kbPath,
  knowledgeBase,
  type Running,
  searchKey,
  startSearch,
} from "./helpers.ts";

const KEY = "cap_srch_qdrant_cluster";
const prefix = qdrantPrefix("cluster");
let cluster: QdrantClusterGround;
let s: Running;

interface ShardView {
  result: { local_shards: Array<{ shard_id: number; points_count: number; state: string }> };
}

async function localShards(url: string, collection: string) {
  const res = await fetch(`${url}/collections/${collection}/cluster`, { signal: AbortSignal.timeout(5000) });
  return ((await res.json()) as ShardView).result.local_shards;
}

beforeAll(async () => {
  cluster = await startQdrantCluster({ peers: 3 });
  s = await startSearch({
    kbs: [knowledgeBase("handbook")],
    keys: [searchKey("q", KEY, { knowledgeIds: ["kb_handbook"] })],
    config: { qdrant: { url: cluster.url, collectionPrefix: prefix, statusIntervalMs: 1000, timeoutMs: 3000 } },
  });
  await ingest(s.internalUrl, "kb_handbook", HANDBOOK.slice(0, 4));
});
afterAll(async () => {
  await s?.close();
  await cluster?.stop();
});

describe("search on a Qdrant cluster", () => {
  it("creates sharded, replicated collections and shows their shards on /readyz", async () => {
    const list = (await (await fetch(`${cluster.peers[1]?.url}/collections`)).json()) as {
      result: { collections: Array<{ name: string }> };
    };
    const names = list.result.collections.map((c) => c.name).filter((n) => n.startsWith(prefix));
    expect(names.sort()).toEqual([`${prefix}_local_all_minilm_l6_v2_384`, `${prefix}_registry`].sort());
    for (const name of names) {
      const info = (await (await fetch(`${cluster.peers[1]?.url}/collections/${name}`)).json()) as {
        result: { config: { params: Record<string, number> } };
      };
      expect(info.result.config.params).toMatchObject({
        shard_number: name.endsWith("_registry") ? 1 : 3,
        replication_factor: 2,
        write_consistency_factor: 1,
      });
    }
    let qdrant:
      | {
          status: string;
          peers: number;
          collections: Record<string, { shards: number; replicas: Record<string, number> }>;
        }
      | undefined;
    for (let i = 0; i < 50 && !qdrant?.collections[names[0] as string]; i++) {
      qdrant = ((await (await fetch(`${s.internalUrl}/readyz`)).json()) as { qdrant: typeof qdrant }).qdrant;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(qdrant).toMatchObject({ status: "enabled", peers: 3 });
    expect(qdrant?.collections[`${prefix}_local_all_minilm_l6_v2_384`]).toMatchObject({
      shards: 3,
      replicas: { Active: 6 },
    });
  });

  it("keeps answering and writing while a peer is down, and the peer catches up when it returns", async () => {
    const data = `${prefix}_local_all_minilm_l6_v2_384`;
    const victim = cluster.peers[0];
    if (!victim) throw new Error("no peer");
    const searches: Array<{ status: number; found: boolean; ms: number }> = [];
    const written: string[] = [];
    const failedWrites: string[] = [];
    let running = true;
    const searchLoop = async () => {
      while (running) {
        const t = Date.now();
        const r = await call<SearchResult[]>(s.url, "/v1/rag/search", {
          token: KEY,
          body: { knowledgeIds: ["kb_handbook"], text: "I forgot my password, how do I get a new one?" },
        }).catch(() => ({ status: -1, body: { data: null } }));
        searches.push({ status: r.status, found: r.body.data?.[0]?.docsId === "password-reset", ms: Date.now() - t });
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const writeLoop = async () => {
      for (let i = 0; running; i++) {
        const docsId = `fault-${i}`;
        const r = await call(s.internalUrl, `${kbPath("kb_handbook")}/documents/${docsId}`, {
          method: "PUT",
          token: INTERNAL_TOKEN,
          body: {
            docsName: `Note ${i}`,
            text: `Operations note number ${i}: the coffee machine on floor ${i % 7} was serviced.`,
          },
        }).catch(() => ({ status: -1 }));
        (r.status === 200 ? written : failedWrites).push(docsId);
      }
    };
    const loops = [searchLoop(), writeLoop()];
    await new Promise((r) => setTimeout(r, 3000));
    const killedAt = Date.now();
    await victim.kill();
    await new Promise((r) => setTimeout(r, 10_000));
    await victim.restart();
    await new Promise((r) => setTimeout(r, 4000));
    running = false;
    await Promise.all(loops);
    const during = searches.filter((x) => x.ms > 0);
    console.log(
      `[qdrant failover] ${JSON.stringify({
        searches: searches.length,
        failedSearches: searches.filter((x) => x.status !== 200 || !x.found).length,
        slowestSearchMs: Math.max(...during.map((x) => x.ms)),
        writes: written.length,
        failedWrites: failedWrites.length,
        downMs: 10_000,
        killedAt: new Date(killedAt).toISOString(),
      })}`,
    );
    expect(searches.length).toBeGreaterThan(20);
    expect(searches.filter((x) => x.status !== 200 || !x.found)).toEqual([]);
    expect(failedWrites).toEqual([]);
    expect(written.length).toBeGreaterThan(5);

    // No lost document: every acknowledged write is counted.
    const stats = await call<{ documents: number }>(s.internalUrl, kbPath("kb_handbook"), {
      method: "GET",
      token: INTERNAL_TOKEN,
    });
    expect(stats.body.data?.documents).toBe(4 + written.length);

    // The peer rejoined: its shards are Active again and hold what the other copies hold.
    await cluster.waitPeers(3, victim);
    let mine: Awaited<ReturnType<typeof localShards>> = [];
    for (let i = 0; i < 120; i++) {
      mine = await localShards(victim.url, data).catch(() => []);
      if (mine.length === 2 && mine.every((x) => x.state === "Active")) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(mine.map((x) => x.state)).toEqual(["Active", "Active"]);
    const others = [
      ...(await localShards(cluster.peers[1]?.url as string, data)),
      ...(await localShards(cluster.peers[2]?.url as string, data)),
    ];
    for (const shard of mine) {
      const copy = others.find((o) => o.shard_id === shard.shard_id);
      expect(shard.points_count, `shard ${shard.shard_id}`).toBe(copy?.points_count);
    }
  });
});
