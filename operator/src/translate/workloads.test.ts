// Golden tests of the pure translators: config and resources in (testdata/*.in.yaml), desired
// objects out (testdata/*.golden.yaml). UPDATE_GOLDEN=1 rewrites the golden files after a deliberate change.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseResource, type Scraper } from "@capstan/shared/api";
import { describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { loadOperatorConfig } from "../config.ts";
import { CONFIG_HASH } from "./common.ts";
import { scraperObjects } from "./scraper.ts";
import { gatewayObjects, searchObjects, searchRefusal } from "./workloads.ts";

const dir = fileURLToPath(new URL("./testdata/", import.meta.url));

function golden(name: string, value: unknown): void {
  const file = `${dir}${name}.golden.yaml`;
  const text = stringify(value, { lineWidth: 0 });
  if (process.env.UPDATE_GOLDEN === "1") writeFileSync(file, text);
  expect(existsSync(file), `testdata/${name}.golden.yaml is missing (UPDATE_GOLDEN=1 writes it)`).toBe(true);
  expect(text, `${name} differs from testdata/${name}.golden.yaml (UPDATE_GOLDEN=1 after a deliberate change)`).toBe(
    readFileSync(file, "utf8"),
  );
}

const config = loadOperatorConfig({}, parse(readFileSync(`${dir}config.in.yaml`, "utf8")) as Record<string, unknown>);

describe("data-plane workloads", () => {
  it("gateway Deployment and Service", () => {
    golden("gateway", gatewayObjects(config, [{ namespace: "team-a", secret: "openai", key: "apiKey" }]));
  });
  it("search Deployment and Service", () => {
    golden("search", searchObjects(config));
  });
  it("the provider-key volume appears only with provider keys", () => {
    expect(JSON.stringify(gatewayObjects(config, []))).not.toContain("provider-keys");
  });
  it("the data plane watches the one watched namespace, or every namespace when the operator watches several", () => {
    const namespaceOf = (watch: Record<string, unknown>) =>
      [gatewayObjects(loadOperatorConfig({}, watch), []), searchObjects(loadOperatorConfig({}, watch))].map(
        (objs) => JSON.stringify(objs).match(/"name":"CAPSTAN_NAMESPACE","value":"([^"]*)"/)?.[1],
      );
    expect(namespaceOf({ watchNamespaces: ["team-a"] })).toEqual(["team-a", "team-a"]);
    expect(namespaceOf({ watchNamespace: "team-a" })).toEqual(["team-a", "team-a"]);
    expect(namespaceOf({ watchNamespaces: ["team-a"], watchNamespace: "team-a" })).toEqual(["team-a", "team-a"]);
    expect(namespaceOf({ watchNamespaces: ["team-a", "team-b"] })).toEqual([undefined, undefined]);
    expect(namespaceOf({})).toEqual([undefined, undefined]);
  });
});

describe("Redis and Qdrant topologies in the data plane's environment", () => {
  const envOf = (objs: unknown[]) => {
    const text = JSON.stringify(objs);
    const containers = JSON.parse(text)[0].spec.template.spec.containers as Array<{
      env: Array<Record<string, unknown>>;
    }>;
    return (
      containers[0]?.env.filter(
        (e) => String(e.name).startsWith("REDIS_") || String(e.name).startsWith("CAPSTAN_QDRANT_"),
      ) ?? []
    );
  };
  const password = { name: "redis-auth", key: "password" };

  it("Sentinel: the sentinels, the master's name and the passwords from their Secrets; no REDIS_URL", () => {
    const c = loadOperatorConfig(
      {},
      {
        redis: {
          mode: "sentinel",
          sentinels: ["s0:26379", "s1:26379"],
          masterName: "capstan",
          passwordSecretRef: password,
          sentinelPasswordSecretRef: { name: "sentinel-auth", key: "pw" },
        },
      },
    );
    const expected = [
      { name: "REDIS_MODE", value: "sentinel" },
      { name: "REDIS_SENTINELS", value: "s0:26379,s1:26379" },
      { name: "REDIS_SENTINEL_MASTER", value: "capstan" },
      { name: "REDIS_PASSWORD", valueFrom: { secretKeyRef: password } },
      { name: "REDIS_SENTINEL_PASSWORD", valueFrom: { secretKeyRef: { name: "sentinel-auth", key: "pw" } } },
    ];
    expect(envOf(gatewayObjects(c, []))).toEqual(expected);
    expect(envOf(searchObjects(c))).toEqual(expected);
  });

  it("Cluster: the seed nodes and TLS", () => {
    const c = loadOperatorConfig({}, { redis: { mode: "cluster", nodes: ["r0:6379"], tls: true } });
    expect(envOf(gatewayObjects(c, []))).toEqual([
      { name: "REDIS_MODE", value: "cluster" },
      { name: "REDIS_CLUSTER_NODES", value: "r0:6379" },
      { name: "REDIS_TLS", value: "true" },
    ]);
  });

  it("refuses a topology without its addresses", () => {
    expect(() => loadOperatorConfig({}, { redis: { mode: "cluster" } })).toThrow(/redis.nodes/);
    expect(() => loadOperatorConfig({}, { redis: { mode: "sentinel" } })).toThrow(/redis.sentinels/);
  });

  it("Qdrant collection layout only when set (0: search decides from the peers)", () => {
    const c = loadOperatorConfig({}, { qdrant: { url: "http://q:6333", collection: { replicationFactor: 3 } } });
    expect(envOf(searchObjects(c))).toContainEqual({ name: "CAPSTAN_QDRANT_REPLICATION_FACTOR", value: "3" });
    expect(envOf(searchObjects(c)).map((e) => e.name)).not.toContain("CAPSTAN_QDRANT_SHARD_NUMBER");
  });
});

/** Every env entry, annotation and label value of every container and pod in `objects`. */
function renderedValues(objects: unknown[]): { where: string; value: unknown }[] {
  const out: { where: string; value: unknown }[] = [];
  const walk = (node: unknown, where: string) => {
    if (Array.isArray(node)) {
      for (const [i, n] of node.entries()) walk(n, `${where}[${i}]`);
    } else if (node && typeof node === "object") {
      for (const [k, v] of Object.entries(node)) walk(v, `${where}.${k}`);
    } else out.push({ where, value: node });
  };
  for (const [i, o] of objects.entries()) walk(o, `[${i}]`);
  return out;
}

describe("empty means unset", () => {
  it('the Deployments rendered from the operator\'s defaults carry no empty value (no CAPSTAN_NAMESPACE="", QDRANT_URL="")', () => {
    const defaults = loadOperatorConfig({});
    const raw = parse(readFileSync(`${dir}scraper.in.yaml`, "utf8"));
    const scraper = { ...parseResource(raw), metadata: { ...raw.metadata, uid: "0000-1111" } } as Scraper;
    const objects = [...gatewayObjects(defaults, []), ...searchObjects(defaults), ...scraperObjects(scraper, defaults)];
    const empty = renderedValues(objects).filter((v) => v.value === "");
    expect(empty).toEqual([]);
    const names = JSON.stringify(objects);
    expect(names).not.toContain('"CAPSTAN_NAMESPACE"');
    expect(names).not.toContain('"QDRANT_URL"');
  });

  it("an empty extraEnv value is dropped; a valueFrom one is kept", () => {
    const c = loadOperatorConfig(
      {},
      {
        gateway: {
          extraEnv: [
            { name: "EMPTY", value: "" },
            { name: "FROM_SECRET", valueFrom: { secretKeyRef: { name: "s", key: "k" } } },
          ],
        },
      },
    );
    const text = JSON.stringify(gatewayObjects(c, []));
    expect(text).not.toContain('"EMPTY"');
    expect(text).toContain('{"name":"FROM_SECRET","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}');
  });
});

describe("search's embedded store", () => {
  const spec = (c: ReturnType<typeof loadOperatorConfig>) =>
    (
      searchObjects(c)[0] as unknown as {
        spec: { strategy: { type: string }; template: { spec: { volumes: unknown[] } } };
      }
    ).spec;

  it("sits on the configured claim and is replaced, never rolled (two pods never share it)", () => {
    const c = loadOperatorConfig({}, { search: { persistence: { claimName: "search-data" } } });
    expect(spec(c).template.spec.volumes).toContainEqual({
      name: "data",
      persistentVolumeClaim: { claimName: "search-data" },
    });
    expect(spec(c).strategy).toEqual({ type: "Recreate" });
  });

  it("refuses at once when stopping (no preStop pause: a write routed to it would be lost); on Qdrant it pauses 5 s", () => {
    type Container = { lifecycle?: { preStop?: { sleep?: { seconds: number } } } };
    const container = (c: ReturnType<typeof loadOperatorConfig>) =>
      (spec(c).template.spec as unknown as { containers: Container[] }).containers[0];
    expect(container(loadOperatorConfig({}, {}))?.lifecycle).toBeUndefined();
    const onQdrant = loadOperatorConfig({}, { qdrant: { url: "http://qdrant:6333" } });
    expect(container(onQdrant)?.lifecycle?.preStop?.sleep?.seconds).toBe(5);
  });

  it("is refused with more than one replica, and allowed with Qdrant", () => {
    expect(searchRefusal(loadOperatorConfig({}, { search: { replicas: 1 } }))).toBeUndefined();
    expect(searchRefusal(loadOperatorConfig({}, { search: { replicas: 2 } }))).toMatch(/search\.replicas is 2/);
    expect(
      searchRefusal(loadOperatorConfig({}, { search: { replicas: 2 }, qdrant: { url: "http://qdrant:6333" } })),
    ).toBeUndefined();
  });
});

describe("Scraper", () => {
  const raw = parse(readFileSync(`${dir}scraper.in.yaml`, "utf8"));
  const scraper = { ...parseResource(raw), metadata: { ...raw.metadata, uid: "0000-1111" } } as Scraper;

  it("Deployment (scraper + rendering service) and Service", () => {
    golden("scraper", scraperObjects(scraper, config));
  });

  it("a spec change changes the pod template's config hash; the same spec does not", () => {
    const hash = (s: Scraper) =>
      (
        (scraperObjects(s, config)[0] as { spec?: unknown }).spec as {
          template: { metadata: { annotations: Record<string, string> } };
        }
      ).template.metadata.annotations[CONFIG_HASH];
    const changed = { ...scraper, spec: { ...scraper.spec, logLevel: "debug" as const } };
    expect(hash(scraper)).toBe(hash({ ...scraper }));
    expect(hash(changed)).not.toBe(hash(scraper));
  });

  it("shares its jobs through the platform Redis only in the platform's namespace, under its own prefix", () => {
    const envOf = (s: Scraper) => {
      const spec = (scraperObjects(s, config)[0] as { spec?: unknown }).spec as {
        template: { spec: { containers: { name: string; env: { name: string; value?: string }[] }[] } };
      };
      const api = spec.template.spec.containers.find((c) => c.name === "scraper");
      return Object.fromEntries((api?.env ?? []).map((e) => [e.name, e.value]));
    };
    const platform = {
      ...scraper,
      metadata: { ...scraper.metadata, name: "capstan-scraper", namespace: config.namespace },
    };
    expect(envOf(platform)).toMatchObject({
      REDIS_URL: "redis://:$(REDIS_PASSWORD)@redis.capstan-system:6379", // the password from its Secret
      SCRAPER_JOBS_REDIS_PREFIX: `{capstan-scraper:${config.namespace}/capstan-scraper}`,
    });
    // A tenant's Scraper (team-a): no way to the platform's Redis through its variables.
    expect(envOf(scraper).REDIS_URL).toBeUndefined();
    expect(envOf(scraper).SCRAPER_JOBS_REDIS_PREFIX).toBeUndefined();
  });
});

describe("the downward API's variables behind the traces' k8s.* attributes", () => {
  const scraper = parseResource({
    apiVersion: "capstan.dev/v1alpha1",
    kind: "Scraper",
    metadata: { name: "docs-crawler", namespace: "team-a", uid: "u-1" },
    spec: {},
  }) as Scraper;
  const deployments = [
    ...gatewayObjects(config, []),
    ...searchObjects(config),
    ...scraperObjects(scraper, config),
  ].filter((o) => o.kind === "Deployment") as unknown as {
    metadata: { name: string };
    spec: {
      template: {
        spec: { containers: { name: string; env: { name: string; value?: string; valueFrom?: unknown }[] }[] };
      };
    };
  }[];

  it("gives every container of every Deployment the pod's namespace, name, UID and node, its Deployment and its own name", () => {
    const seen: string[] = [];
    for (const d of deployments) {
      for (const c of d.spec.template.spec.containers) {
        seen.push(`${d.metadata.name}/${c.name}`);
        const byName = new Map(c.env.map((e) => [e.name, e]));
        const field = (name: string) =>
          (byName.get(name)?.valueFrom as { fieldRef?: { fieldPath?: string } })?.fieldRef?.fieldPath;
        expect(field("K8S_NAMESPACE_NAME")).toBe("metadata.namespace");
        expect(field("K8S_POD_NAME")).toBe("metadata.name");
        expect(field("K8S_POD_UID")).toBe("metadata.uid");
        expect(field("K8S_NODE_NAME")).toBe("spec.nodeName");
        expect(byName.get("K8S_DEPLOYMENT_NAME")?.value).toBe(d.metadata.name);
        expect(byName.get("K8S_CONTAINER_NAME")?.value).toBe(c.name);
      }
    }
    expect(seen.sort()).toEqual([
      "capstan-gateway/gateway",
      "capstan-search/search",
      "docs-crawler/render",
      "docs-crawler/scraper",
    ]);
  });
});
