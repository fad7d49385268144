// Capstan on the engines a platform team already runs: a Redis Cluster (three masters, one
// replica each, with a password) and a Qdrant cluster (three peers), both outside Kubernetes as
// managed services are, reached by the pods at the node's bridge address. The chart is installed
// with redis.mode=cluster and every Qdrant peer in qdrant.url; a KnowledgeBase built by the
// operator lands in the Qdrant cluster, chat's QPM limiter and history live in the Redis Cluster,
// and both answer through the ingress. The release is uninstalled afterwards, so the next file's
// ensurePlatform installs the shared platform afresh (as after operate.test.ts).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Agent, fetch } from "undici";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { helm } from "../ground/helm.ts";
import type { TestKube } from "../ground/kube-client.ts";
import { net } from "../ground/node-config.ts";
import { type QdrantClusterGround, startQdrantCluster } from "../ground/qdrant-cluster.ts";
import { cli, type RedisClusterGround, startRedisCluster } from "../ground/redis-topologies.ts";
import { apply, condition, deploymentReady, e2eKube, eventually, get, remove } from "./support/kube.ts";
import {
  helmInstall,
  ingressBase,
  ingressDispatcher,
  installValues,
  keyOf,
  makeTls,
  prerequisites,
  RELEASE,
  SYSTEM_NS,
} from "./support/platform.ts";

const CR = "capstan.dev/v1alpha1";
const NS = "capstan-topologies";
const QPM = 5;
const PASSWORD = randomBytes(16).toString("hex");
const REDIS_SECRET = "capstan-redis-cluster";
/** A sentence no model or example knows: finding it proves the pipeline ran on these engines. */
const FACT = "The tide clock of the copper quay chimes seventeen times when the ferry lanterns are lit.";

let kube: TestKube;
let home: string;
let dispatcher: Agent;
let redis: RedisClusterGround | undefined;
let qdrant: QdrantClusterGround | undefined;

async function post(path: string, key: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${ingressBase()}${path}`, {
    method: "POST",
    dispatcher,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** The values that point the release at the two clusters (the rest as every e2e install). */
function topologyValues(): string[] {
  if (!redis || !qdrant) throw new Error("the clusters are not running");
  return [
    "redis.deploy.enabled=false",
    "redis.mode=cluster",
    ...redis.nodes.map((n, i) => `redis.cluster.nodes[${i}]=${n}`),
    `redis.passwordSecret.name=${REDIS_SECRET}`,
    // Every peer, so search moves on to the next when one does not answer; helm's --set splits
    // on unescaped commas.
    `qdrant.url=${qdrant.url.replaceAll(",", "\\,")}`,
  ];
}

/** Every key the Redis Cluster's masters hold. */
async function clusterKeys(): Promise<string[]> {
  const keys: string[] = [];
  for (const node of redis?.all ?? []) {
    if ((await cli(node.port, PASSWORD, "ROLE")).startsWith("master")) {
      keys.push(...(await cli(node.port, PASSWORD, "--scan")).split("\n").filter(Boolean));
    }
  }
  return keys;
}

beforeAll(async () => {
  kube = e2eKube();
  home = mkdtempSync(join(tmpdir(), "capstan-e2e-topologies-"));
  const started = Date.now();
  // Host processes on the bridge's host address: the pods' gateway, so every pod reaches them.
  [redis, qdrant] = await Promise.all([
    startRedisCluster({ password: PASSWORD, host: net.hostIp }),
    startQdrantCluster({ peers: 3, host: net.hostIp }),
  ]);
  console.log(`[e2e topologies] Redis Cluster and Qdrant cluster up in ${Date.now() - started} ms`);
  const tls = makeTls(join(home, "tls"));
  dispatcher = ingressDispatcher(tls.ca);
  await prerequisites(kube, tls);
  await apply(kube, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: REDIS_SECRET, namespace: SYSTEM_NS },
    ...({ stringData: { password: PASSWORD } } as object),
  });
  const installStarted = Date.now();
  await helmInstall(home, installValues(topologyValues()));
  // The operator renders the gateway and search on the new settings after helm is done: until it
  // has, both Deployments are the previous file's (the in-chart Redis, search's embedded store),
  // and Ready.
  const seed = redis.nodes[0] as string;
  const peer = new URL(qdrant.peers[0]?.url as string).host;
  for (const [name, names] of [
    ["capstan-gateway", seed],
    ["capstan-search", peer],
  ] as const) {
    await eventually(`${name} rendered on the clusters (${names})`, async () => {
      const d = await get(kube, "Deployment", "apps/v1", name, SYSTEM_NS);
      return JSON.stringify(d?.spec?.template ?? {}).includes(names) ? true : undefined;
    });
  }
  await deploymentReady(kube, SYSTEM_NS, "capstan-gateway");
  await deploymentReady(kube, SYSTEM_NS, "capstan-search");
  console.log(`[e2e topologies] helm install on the clusters Ready in ${Date.now() - installStarted} ms`);
}, 900_000);

afterAll(async () => {
  const started = Date.now();
  try {
    if (kube) {
      await remove(kube, "Namespace", "v1", NS);
      // As docs/install.md says: the hook-made platform Scraper first, while the operator runs.
      await remove(kube, "Scraper", CR, "capstan-scraper", SYSTEM_NS);
      const res = await helm(
        ["uninstall", RELEASE, "-n", SYSTEM_NS, "--kubeconfig", inject("e2eKubeconfig"), "--wait"],
        home,
        180_000,
      );
      if (res.code !== 0) console.log(`[e2e topologies] helm uninstall failed: ${res.stderr}`);
      await remove(kube, "Secret", "v1", REDIS_SECRET, SYSTEM_NS);
    }
  } finally {
    await Promise.allSettled([redis?.stop(), qdrant?.stop()]);
    if (home) rmSync(home, { recursive: true, force: true });
    console.log(`[e2e topologies] uninstall and clusters stopped in ${Date.now() - started} ms`);
  }
}, 300_000);

describe("the platform on a Redis Cluster and a Qdrant cluster", () => {
  beforeAll(async () => {
    await apply(kube, { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
    await apply(kube, {
      apiVersion: CR,
      kind: "KnowledgeBase",
      metadata: { name: "harbour", namespace: NS },
      spec: { sources: [{ name: "Harbour notes", text: `${FACT}\nThe quay is swept every morning.` }] },
    });
    await apply(kube, {
      apiVersion: CR,
      kind: "Agent",
      metadata: { name: "harbour-assistant", namespace: NS },
      spec: { knowledge: { knowledgeIds: ["kb_harbour"], maxResults: 2 } },
    });
    await apply(kube, {
      apiVersion: CR,
      kind: "AccessChannel",
      metadata: { name: "harbour-chat", namespace: NS },
      spec: { channelName: "Harbour chat", agentRef: { name: "harbour-assistant" }, qpm: QPM, keepHistory: true },
    });
    await apply(kube, {
      apiVersion: CR,
      kind: "SearchKey",
      metadata: { name: "harbour-search", namespace: NS },
      spec: { keyName: "Harbour search", knowledgeIds: ["kb_harbour"], allowedCIDRs: ["127.0.0.1"] },
    });
    await eventually("KnowledgeBase harbour ingested", async () => {
      const k = await get(kube, "KnowledgeBase", CR, "harbour", NS);
      return (k?.status?.chunks as number) > 0 && condition(k, "Ready")?.status === "True" ? k : undefined;
    });
    for (const [kind, name] of [
      ["AccessChannel", "harbour-chat"],
      ["SearchKey", "harbour-search"],
    ] as const) {
      await eventually(`${kind} ${name} issued`, async () =>
        (await get(kube, kind, CR, name, NS))?.status?.secretName ? true : undefined,
      );
    }
  }, 300_000);

  it("keeps the knowledge base in the Qdrant cluster, sharded and replicated over its peers", async () => {
    const peer = qdrant?.peers[0]?.url as string;
    const json = async <T>(path: string): Promise<T> =>
      ((await (await fetch(`${peer}${path}`)).json()) as { result: T }).result;
    const { collections } = await json<{ collections: { name: string }[] }>("/collections");
    const layouts: Record<string, { shards: number; copies: number; points: number }> = {};
    for (const { name } of collections) {
      const info = await json<{
        points_count: number;
        config: { params: { shard_number: number; replication_factor: number } };
      }>(`/collections/${name}`);
      const cluster = await json<{ local_shards: { state: string }[]; remote_shards: { state: string }[] }>(
        `/collections/${name}/cluster`,
      );
      const copies = [...cluster.local_shards, ...cluster.remote_shards];
      const { shard_number, replication_factor } = info.config.params;
      // Every copy of every shard in place and Active.
      expect(copies.map((c) => c.state)).toEqual(Array(shard_number * replication_factor).fill("Active"));
      layouts[name.endsWith("_registry") ? "registry" : name] = {
        shards: shard_number,
        copies: replication_factor,
        points: info.points_count,
      };
    }
    console.log(`[e2e topologies] Qdrant collections: ${JSON.stringify(layouts)}`);
    // search's layout on a 3-peer cluster: the chunks in one shard per peer, two copies of each;
    // the registry in one shard, also copied twice.
    expect(layouts.registry).toMatchObject({ shards: 1, copies: 2 });
    const data = Object.entries(layouts).filter(([name, l]) => name !== "registry" && l.points > 0);
    expect(data.length, "a collection holding the knowledge base's chunks").toBeGreaterThan(0);
    for (const [, l] of data) expect(l).toMatchObject({ shards: 3, copies: 2 });
  });

  it("answers search through the ingress from the Qdrant cluster", async () => {
    const key = await keyOf(kube, "SearchKey", "harbour-search", NS);
    const res = await eventually(
      "the key and knowledge base reach search",
      async () => {
        const r = await post("/v1/rag/search", key, {
          text: "How many times does the tide clock chime?",
          knowledgeIds: ["kb_harbour"],
          minSimilarity: 0.3,
        });
        return r.status === 200 && ((r.body as { data: unknown[] }).data?.length ?? 0) > 0 ? r : undefined;
      },
      60_000,
    );
    expect((res.body as { data: { text: string; knowledgeId: string }[] }).data[0]).toMatchObject({
      knowledgeId: "kb_harbour",
      text: expect.stringContaining("seventeen"),
    });
  });

  it("answers chat through the ingress, limited to the channel's QPM across both gateways by the Redis Cluster", async () => {
    const key = await keyOf(kube, "AccessChannel", "harbour-chat", NS);
    const ask = () =>
      post("/api/v1/chat/completions", key, {
        model: "m",
        messages: [{ role: "user", content: "How many times does the tide clock of the copper quay chime?" }],
      });
    // The first answer may wait for the new channel to reach both gateways.
    const first = await eventually("a chat answer", async () => {
      const r = await ask();
      return r.status === 200 ? r : undefined;
    });
    expect(JSON.stringify(first.body)).toContain("seventeen");
    const statuses = [200];
    for (let i = 0; i < QPM + 3; i++) statuses.push((await ask()).status);
    // The sliding log in Redis is shared by both gateways: exactly QPM admitted. Each replica's
    // local share (the policy when Redis is unreachable) would have admitted floor(QPM / 2) each.
    expect(statuses.filter((s) => s === 200)).toHaveLength(QPM);
    expect(statuses.slice(QPM).every((s) => s === 429)).toBe(true);
    const keys = await clusterKeys();
    console.log(`[e2e topologies] Redis Cluster keys after chat: ${keys.length} (${keys.slice(0, 8).join(" ")})`);
    expect(keys.length).toBeGreaterThan(0);
  });

  it("reads the channel's history back from the Redis Cluster through the ingress", async () => {
    const key = await keyOf(kube, "AccessChannel", "harbour-chat", NS);
    const res = await fetch(`${ingressBase()}/api/v1/history`, {
      dispatcher,
      headers: { authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(30_000),
    });
    const body = (await res.json()) as { data?: unknown[] };
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(JSON.stringify(body)).toContain("seventeen");
  });
});
