// Token limits, budgets and usage on a real three-master Redis Cluster (with a password): every
// script and pipeline of token accounting keeps its keys in one hash slot (the channel's tag), or
// the cluster would refuse it (CROSSSLOT). Channels chosen to land on all three masters; two
// gateways admit, settle and write usage (channels with limits in their settlement script, the
// others through the once-a-second pipeline), and either reads it all back.
import { redisTopologySchema } from "@capstan/shared/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addResources, emptyView, type RunningGateway, startGateway, uniqueNamespace } from "../gateway/helpers.ts";
import { type RedisClusterGround, startRedisCluster } from "../ground/redis-topologies.ts";
import { post } from "./helpers.ts";

const PASSWORD = `pw-${Math.random().toString(36).slice(2)}-secret`;
const ns = uniqueNamespace("tokcl");
const names = Array.from({ length: 9 }, (_, i) => `ch-${i}`);
let cluster: RedisClusterGround;
let a: RunningGateway;
let b: RunningGateway;
let keys: Record<string, string>;

beforeAll(async () => {
  cluster = await startRedisCluster({ password: PASSWORD });
  const view = emptyView();
  keys = addResources(
    view,
    ns,
    names.map((name) => ({ name, agent: "offline", qpm: 1000 })),
    [{ name: "offline", spec: { description: "no provider, no knowledge" } }],
  );
  // A third of the channels with a TPM, a third with a budget, a third with neither.
  for (const c of view.list("AccessChannel").filter((c) => c.metadata.namespace === ns)) {
    const i = Number(c.metadata.name.slice(3));
    if (i % 3 === 0) c.spec.tpm = 100_000;
    if (i % 3 === 1) c.spec.budget = { tokens: 100_000, period: "month", warnPercent: 80 };
    view.upsert(c);
  }
  const config = {
    redis: redisTopologySchema.parse({ mode: "cluster", nodes: cluster.nodes, password: PASSWORD }),
    limiter: { redisTimeoutMs: 10_000 },
  };
  a = await startGateway(config, { view });
  b = await startGateway(config, { view });
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([a?.close(), b?.close()]);
  await cluster?.stop();
});

describe("token accounting on a Redis Cluster", () => {
  it("admits, settles and keeps usage for channels on every master; either gateway reads it back", async () => {
    const masters = new Set<number>();
    for (const name of names) masters.add((await cluster.masterOf(`capstan:tok:{${ns}/${name}}:tpm`)).port);
    expect(masters.size).toBe(3);
    for (const name of names) {
      for (const gw of [a, b]) {
        const res = await post(gw.url, keys[name] as string);
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
    }
    const read = async () =>
      (
        (await (await fetch(`${b.internalUrl}/internal/v1/usage?namespace=${ns}&hours=1`)).json()) as {
          usage: Array<{ channel: string; requests: number }>;
        }
      ).usage;
    let rows = await read();
    for (let i = 0; i < 60 && rows.reduce((n, r) => n + r.requests, 0) < 2 * names.length; i++) {
      await new Promise((r) => setTimeout(r, 100));
      rows = await read();
    }
    for (const name of names) {
      expect(rows.filter((r) => r.channel === `${ns}/${name}`).reduce((n, r) => n + r.requests, 0)).toBe(2);
    }
    const budget = await (await fetch(`${a.internalUrl}/internal/v1/budget?channel=${ns}/ch-1`)).json();
    expect((budget as { budget: { spent: number } }).budget.spent).toBeGreaterThan(0);
    for (const gw of [a, b]) {
      const logs = gw.logs.join("\n");
      expect(logs).not.toContain("CROSSSLOT");
      expect(logs).not.toContain("usage write failed");
      expect(logs).not.toContain(PASSWORD);
    }
  });
});
