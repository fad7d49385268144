import { describe, expect, it } from "vitest";
import { z } from "zod";
import { loadConfig } from "../config.ts";
import { companionKey, subjectKey } from "./keys.ts";
import { describeRedisTarget, redisEnvMap, redisTarget, redisTopologySchema } from "./topology.ts";

const schema = z.object({ redisUrl: z.string().optional(), redis: redisTopologySchema });

describe("Redis topology", () => {
  it("reads Sentinel and Cluster from the environment, the password from REDIS_PASSWORD", () => {
    const s = loadConfig(schema, {
      env: {
        REDIS_MODE: "sentinel",
        REDIS_SENTINELS: "s1:26379, s2:26379",
        REDIS_SENTINEL_MASTER: "capstan",
        REDIS_PASSWORD: "hunter2-secret",
      },
      envMap: redisEnvMap,
    });
    expect(s.redis).toMatchObject({ mode: "sentinel", sentinels: ["s1:26379", "s2:26379"], masterName: "capstan" });
    const target = redisTarget(undefined, s.redis);
    expect(target?.mode).toBe("sentinel");
    expect(describeRedisTarget(target as NonNullable<typeof target>)).toBe(
      'sentinel master "capstan" via s1:26379,s2:26379',
    );
    const c = loadConfig(schema, {
      env: { REDIS_MODE: "cluster", REDIS_CLUSTER_NODES: "10.0.0.1:6379" },
      envMap: redisEnvMap,
    });
    expect(redisTarget(undefined, c.redis)).toMatchObject({ mode: "cluster", topology: { nodes: ["10.0.0.1:6379"] } });
  });

  it("standalone needs a URL; Sentinel and Cluster need their addresses", () => {
    expect(redisTarget(undefined, redisTopologySchema.parse({}))).toBeUndefined();
    expect(redisTarget("redis://r:6379", redisTopologySchema.parse({}))?.mode).toBe("standalone");
    expect(() => redisTopologySchema.parse({ mode: "sentinel" })).toThrow(/at least one sentinel/);
    expect(() => redisTopologySchema.parse({ mode: "cluster" })).toThrow(/at least one seed node/);
    expect(() => redisTopologySchema.parse({ mode: "cluster", nodes: ["no-port"] })).toThrow(/host:port/);
  });

  it("never describes a password", () => {
    const t = redisTarget("redis://:pw-in-url@r:6379", redisTopologySchema.parse({ password: "pw2" }));
    const text = describeRedisTarget(t as NonNullable<typeof t>);
    expect(text).toBe("standalone redis://r:6379");
  });
});

describe("hash-tagged keys", () => {
  it("puts a subject in braces and keeps companions in its slot", () => {
    expect(subjectKey("capstan:usage:", "ns/ch")).toBe("capstan:usage:{ns/ch}");
    expect(companionKey("capstan:usage:{ns/ch}", "day")).toBe("capstan:usage:{ns/ch}:day");
    // A key without a tag becomes the tag of its companion: both hash the same characters.
    expect(companionKey("capstan:history:ns/ch", "written:x")).toBe("{capstan:history:ns/ch}:written:x");
    expect(() => subjectKey("p:", "a{b}")).toThrow(/braces/);
    expect(() => companionKey("p:{}x", "y")).toThrow(/hash tag/);
  });
});
