// The chart's Redis topologies (standalone, Sentinel, Cluster) and a Qdrant cluster's collection
// layout with real helm: a topology without its addresses fails at render time, and the gateway and
// search parse exactly what the operator renders from each (their own config loaders).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayObjects, searchObjects } from "../../operator/src/translate/workloads.ts";
import { loadGatewayConfig } from "../../services/gateway/src/config.ts";
import { loadSearchConfig } from "../../services/search/src/config.ts";
import { ChartRun, type Container, containerEnv, pod, type Rendered } from "./chart-kit.ts";

const run = new ChartRun("charttopo");
const render = (set: string[]) => run.render(set);
const refused = (set: string[]) => run.refused(set);
const operatorConfig = (objects: Rendered[]) => run.operatorConfig(objects);

beforeAll(() => run.setup());
afterAll(() => run.cleanup());

describe("Redis Sentinel and Cluster, a Qdrant cluster's layout", () => {
  it("refuses a topology without its addresses, or with a standalone URL beside it", async () => {
    expect(await refused(["redis.mode=sentinel"])).toContain("redis.sentinel.addresses");
    expect(await refused(["redis.mode=cluster"])).toContain("redis.cluster.nodes");
    expect(
      await refused(["redis.mode=cluster", "redis.cluster.nodes={r0:6379}", "redis.url=redis://r:6379"]),
    ).toContain("unset redis.url");
  });

  it("the gateway and search read what the operator renders from each topology", async () => {
    const sentinel = await render([
      "redis.mode=sentinel",
      "redis.sentinel.addresses={s0.redis:26379,s1.redis:26379}",
      "redis.sentinel.masterName=capstan",
      "redis.passwordSecret.name=redis-auth",
      "qdrant.url=http://qdrant:6333",
      "qdrant.collection.replicationFactor=3",
    ]);
    const c = operatorConfig(sentinel);
    const gw = loadGatewayConfig(containerEnv(pod(gatewayObjects(c, [])[0] as Rendered).containers[0] as Container));
    expect(gw.redisUrl).toBeUndefined();
    expect(gw.redis).toMatchObject({
      mode: "sentinel",
      sentinels: ["s0.redis:26379", "s1.redis:26379"],
      masterName: "capstan",
      password: "s3cret-0123456789abcdef",
    });
    const se = loadSearchConfig(containerEnv(pod(searchObjects(c)[0] as Rendered).containers[0] as Container));
    expect(se.redis.mode).toBe("sentinel");
    expect(se.qdrant.collection).toEqual({ replicationFactor: 3 });
    const cluster = operatorConfig(await render(["redis.mode=cluster", "redis.cluster.nodes={r0:6379,r1:6379}"]));
    const gw2 = loadGatewayConfig(
      containerEnv(pod(gatewayObjects(cluster, [])[0] as Rendered).containers[0] as Container),
    );
    expect(gw2.redis).toMatchObject({ mode: "cluster", nodes: ["r0:6379", "r1:6379"] });
  });
});
