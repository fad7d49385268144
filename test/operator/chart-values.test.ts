// charts/capstan's values with real helm: the schema rejects wrong types and unknown keys, settings
// that cannot work together fail at render time with the fix in the message, and each optional
// part (dev Redis, dev Qdrant, search's claim, Ingress, HTTPRoute, NetworkPolicies, budgets)
// renders objects the real API server accepts (server-side dry run) that point at what the
// operator really applies (its translators run on the rendered config).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { KubeHttp } from "@capstan/shared/kube";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { GATEWAY_NAME, loadOperatorConfig, type OperatorConfig, SEARCH_NAME } from "../../operator/src/config.ts";
import { gatewayObjects, searchObjects } from "../../operator/src/translate/workloads.ts";
import { ensureNamespace, harnessKubeClient, installCrds } from "../ground/kube-client.ts";
import { dryRunApply, helmTemplate, MINIMAL, one, parseRendered, type Rendered } from "./chart-kit.ts";

const suffix = `${process.pid}-${Date.now().toString(36)}`;
const ns = `chartv-${suffix}`;
const release = `capv-${suffix}`;
const chartDir = fileURLToPath(new URL("../../charts/capstan/", import.meta.url));

let home: string;
let admin: KubeHttp;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "capstan-helm-values-"));
  admin = harnessKubeClient();
  await installCrds(admin);
  await ensureNamespace(admin, ns);
});

afterAll(() => {
  if (home) rmSync(home, { recursive: true, force: true });
});

async function render(set: string[], files: string[] = []): Promise<Rendered[]> {
  const res = await helmTemplate(home, release, ns, set, files);
  expect(res.stderr, `helm template ${set.join(" ")}`).toBe("");
  expect(res.code).toBe(0);
  return parseRendered(res.stdout);
}

/** helm template that must fail; its error output. */
async function refused(set: string[]): Promise<string> {
  const res = await helmTemplate(home, release, ns, set);
  expect(res.code, `expected helm template ${set.join(" ")} to fail`).not.toBe(0);
  return res.stderr;
}

interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  securityContext?: Record<string, unknown>;
}
interface PodSpec {
  containers: Container[];
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
  terminationGracePeriodSeconds?: number;
  volumes?: { name: string; persistentVolumeClaim?: { claimName: string } }[];
}
type Workload = Rendered & { spec: { template: { metadata: { labels: Record<string, string> }; spec: PodSpec } } };

function pod(obj: Rendered): PodSpec {
  return (obj as Workload).spec.template.spec;
}

/** The operator's config as the operator loads it: the ConfigMap's file plus the container's env. */
function operatorConfig(objects: Rendered[]): OperatorConfig {
  const file = join(home, `operator-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, one(objects, "ConfigMap").data?.["operator.yaml"] ?? "");
  const operator = objects.find((o) => o.kind === "Deployment" && o.metadata.name.endsWith("-operator")) as Rendered;
  const env: Record<string, string> = {};
  for (const e of pod(operator).containers[0]?.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  // What the pod's mount and downward API would give.
  return loadOperatorConfig({ ...env, CAPSTAN_OPERATOR_CONFIG: file, POD_NAME: "operator-0", CAPSTAN_NAMESPACE: ns });
}

function envOf(obj: Rendered, container = 0): Record<string, string | undefined> {
  return Object.fromEntries((pod(obj).containers[container]?.env ?? []).map((e) => [e.name, e.value]));
}

describe("values.schema.json", () => {
  it("rejects a wrong type, naming the key", async () => {
    const err = await refused([...MINIMAL, "gateway.replicas=two"]);
    expect(err).toContain("gateway.replicas");
    expect(err).toMatch(/Expected: integer, given: string/);
  });

  it("rejects unknown keys at the top and inside sections", async () => {
    expect(await refused([...MINIMAL, "gatewy.replicas=2"])).toContain("gatewy");
    expect(await refused([...MINIMAL, "search.persistence.existingClam=x"])).toContain("existingClam");
  });

  it("rejects a password inside redis.url (it belongs in a Secret)", async () => {
    expect(await refused(["redis.url=redis://:hunter2@redis:6379"])).toContain("redis.url");
  });

  it("declares every value of values.yaml (no documented value is refused as unknown)", () => {
    const schema = JSON.parse(readFileSync(`${chartDir}values.schema.json`, "utf8"));
    const values = parse(readFileSync(`${chartDir}values.yaml`, "utf8"));
    const undeclared: string[] = [];
    const walk = (node: unknown, s: { properties?: Record<string, unknown> } | undefined, path: string) => {
      if (!node || typeof node !== "object" || Array.isArray(node) || !s?.properties) return;
      for (const [k, v] of Object.entries(node)) {
        const sub = s.properties[k] as { properties?: Record<string, unknown> } | undefined;
        if (!sub) undeclared.push(path ? `${path}.${k}` : k);
        else walk(v, sub, path ? `${path}.${k}` : k);
      }
    };
    walk(values, schema, "");
    expect(undeclared).toEqual([]);
  });
});

describe("settings that cannot work together fail at render time", () => {
  it("no Redis at all: the message names both ways to get one", async () => {
    const err = await refused([]);
    expect(err).toContain("redis.url=");
    expect(err).toContain("redis.deploy.enabled=true");
  });

  it("both an external and the dev Redis", async () => {
    expect(await refused(["redis.url=redis://r:6379", "redis.deploy.enabled=true"])).toContain("not both");
  });

  it("more than one search replica on the embedded store, or the embedded store without a claim", async () => {
    expect(await refused([...MINIMAL, "search.replicas=2"])).toContain(
      "search.replicas=2 with the embedded vector store",
    );
    expect(await refused([...MINIMAL, "search.persistence.enabled=false"])).toContain(
      "search.persistence.enabled=false",
    );
  });

  it("more than one search replica is fine with Qdrant, and then search needs no claim", async () => {
    const objects = await render([...MINIMAL, "search.replicas=2", "qdrant.url=http://qdrant.db:6333"]);
    expect(objects.filter((o) => o.kind === "PersistentVolumeClaim")).toEqual([]);
    const c = operatorConfig(objects);
    expect(c.qdrant.url).toBe("http://qdrant.db:6333");
    expect(c.search.persistence.claimName).toBeUndefined();
    expect(c.search.replicas).toBe(2);
  });
});

describe("Redis", () => {
  it("the dev Redis: Deployment and Service capstan-redis, secure, nothing persisted, the gateway pointed at it", async () => {
    const objects = await render(MINIMAL);
    const redis = one(objects, "Deployment", "capstan-redis");
    const container = pod(redis).containers[0] as Container;
    expect(container.image).toBe("localhost/capstan/redis:dev");
    expect(container.args?.join(" ")).toContain("--save  --appendonly no");
    expect(container.args).not.toContain("--requirepass");
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
    expect(one(objects, "Service", "capstan-redis").spec?.ports).toEqual([
      { name: "redis", port: 6379, targetPort: "redis" },
    ]);
    const gw = gatewayObjects(operatorConfig(objects), [])[0] as Rendered;
    expect(envOf(gw).REDIS_URL).toBe(`redis://capstan-redis.${ns}.svc:6379`);
    for (const o of objects.filter((o) => o.metadata.name === "capstan-redis")) await dryRunApply(admin, o, ns);
  });

  it("a password Secret protects the dev Redis and reaches the gateway only through Kubernetes' $(VAR) expansion", async () => {
    const objects = await render([...MINIMAL, "redis.passwordSecret.name=redis-auth"]);
    const container = pod(one(objects, "Deployment", "capstan-redis")).containers[0] as Container;
    expect(container.args?.slice(-2)).toEqual(["--requirepass", "$(REDIS_PASSWORD)"]);
    expect(container.env).toEqual([
      { name: "REDIS_PASSWORD", valueFrom: { secretKeyRef: { name: "redis-auth", key: "password" } } },
    ]);
    const gwEnv = pod(gatewayObjects(operatorConfig(objects), [])[0] as Rendered).containers[0]?.env ?? [];
    const names = gwEnv.map((e) => e.name);
    expect(names.indexOf("REDIS_PASSWORD")).toBeLessThan(names.indexOf("REDIS_URL"));
    expect(gwEnv.find((e) => e.name === "REDIS_URL")?.value).toBe(
      `redis://:$(REDIS_PASSWORD)@capstan-redis.${ns}.svc:6379`,
    );
  });

  it("an external Redis: no Redis in the release", async () => {
    const objects = await render(["redis.url=rediss://cache.example:6380"]);
    expect(objects.filter((o) => o.metadata.name === "capstan-redis")).toEqual([]);
    expect(operatorConfig(objects).redis.url).toBe("rediss://cache.example:6380");
  });
});

describe("Qdrant and search's store", () => {
  it("the dev Qdrant: Deployment on its own claim, Service capstan-qdrant, search pointed at it", async () => {
    const objects = await render([...MINIMAL, "qdrant.deploy.enabled=true", "qdrant.apiKeySecret.name=qdrant-key"]);
    const qdrant = one(objects, "Deployment", "capstan-qdrant");
    const env = pod(qdrant).containers[0]?.env ?? [];
    expect(env).toContainEqual({ name: "QDRANT__SERVICE__HTTP_PORT", value: "6333" });
    expect(env).toContainEqual({
      name: "QDRANT__SERVICE__API_KEY",
      valueFrom: { secretKeyRef: { name: "qdrant-key", key: "apiKey" } },
    });
    expect(pod(qdrant).volumes).toContainEqual({
      name: "storage",
      persistentVolumeClaim: { claimName: "capstan-qdrant-data" },
    });
    expect(one(objects, "PersistentVolumeClaim").metadata.name).toBe("capstan-qdrant-data");
    const search = searchObjects(operatorConfig(objects))[0] as Rendered;
    expect(envOf(search).QDRANT_URL).toBe(`http://capstan-qdrant.${ns}.svc:6333`);
    for (const o of objects.filter((o) => o.metadata.name.startsWith("capstan-qdrant")))
      await dryRunApply(admin, o, ns);
  });

  it("the embedded store: a kept claim by default, mounted by the search Deployment the operator applies", async () => {
    const objects = await render(MINIMAL);
    const claim = one(objects, "PersistentVolumeClaim", "capstan-search-data");
    expect(claim.metadata.annotations?.["helm.sh/resource-policy"]).toBe("keep");
    expect(claim.spec?.storageClassName).toBeUndefined();
    const search = searchObjects(operatorConfig(objects))[0] as Rendered;
    expect(pod(search).volumes).toContainEqual({
      name: "data",
      persistentVolumeClaim: { claimName: "capstan-search-data" },
    });
    expect(envOf(search).QDRANT_URL).toBeUndefined();
    await dryRunApply(admin, claim, ns);
  });

  it('an existing claim is used as it is; storageClass "-" asks for static volumes', async () => {
    const existing = await render([...MINIMAL, "search.persistence.existingClaim=pre-bound"]);
    expect(existing.filter((o) => o.kind === "PersistentVolumeClaim")).toEqual([]);
    expect(operatorConfig(existing).search.persistence.claimName).toBe("pre-bound");
    const staticClass = await render([...MINIMAL, "search.persistence.storageClass=-"]);
    expect(one(staticClass, "PersistentVolumeClaim").spec?.storageClassName).toBe("");
    const named = await render([...MINIMAL, "search.persistence.storageClass=local-path"]);
    expect(one(named, "PersistentVolumeClaim").spec?.storageClassName).toBe("local-path");
  });
});

describe("pod settings and OpenTelemetry flow from values to every workload", () => {
  const set = [
    ...MINIMAL,
    "otel.endpoint=http://collector.observability:4318",
    "otel.protocol=http/protobuf",
    "otel.sampler=parentbased_traceidratio",
    "otel.samplerArg=0.5",
    "otel.resourceAttributes.deployment\\.environment=staging",
    "gateway.nodeSelector.pool=edge",
    "gateway.tolerations[0].key=dedicated",
    "gateway.tolerations[0].operator=Exists",
    "gateway.podAnnotations.team=ai",
    "gateway.terminationGracePeriodSeconds=45",
    "gateway.extraEnv[0].name=CAPSTAN_E2E_MARK",
    "gateway.extraEnv[0].value=on",
    "gateway.extraEnv[1].name=DROPPED",
    "gateway.extraEnv[1].value=",
    "search.nodeSelector.pool=data",
    "scraper.nodeSelector.pool=browsers",
    "operator.nodeSelector.pool=system",
    "operator.terminationGracePeriodSeconds=40",
    "operator.extraEnv[0].name=OPERATOR_MARK",
    "operator.extraEnv[0].value=yes",
  ];

  it("gateway and search Deployments (through the operator's config and translators)", async () => {
    const objects = await render(set);
    const c = operatorConfig(objects);
    const gw = gatewayObjects(c, [])[0] as unknown as Workload;
    expect(gw.spec.template.spec).toMatchObject({
      nodeSelector: { pool: "edge" },
      tolerations: [{ key: "dedicated", operator: "Exists" }],
      terminationGracePeriodSeconds: 45,
    });
    expect((gw.spec.template.metadata as unknown as { annotations: Record<string, string> }).annotations.team).toBe(
      "ai",
    );
    const env = envOf(gw);
    expect(env).toMatchObject({
      CAPSTAN_E2E_MARK: "on",
      OTEL_SERVICE_NAME: GATEWAY_NAME,
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector.observability:4318",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.5",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=staging",
    });
    expect(Object.keys(env)).not.toContain("DROPPED");
    const search = searchObjects(c)[0] as unknown as Workload;
    expect(search.spec.template.spec.nodeSelector).toEqual({ pool: "data" });
    expect(envOf(search).OTEL_SERVICE_NAME).toBe(SEARCH_NAME);
    expect(c.scraper.nodeSelector).toEqual({ pool: "browsers" });
  });

  it("the operator's own Deployment, with no empty variable", async () => {
    const objects = await render(set);
    const operator = objects.find((o) => o.kind === "Deployment" && o.metadata.name.endsWith("-operator")) as Rendered;
    expect(pod(operator)).toMatchObject({ nodeSelector: { pool: "system" }, terminationGracePeriodSeconds: 40 });
    const env = pod(operator).containers[0]?.env ?? [];
    expect(envOf(operator)).toMatchObject({ OPERATOR_MARK: "yes", OTEL_SERVICE_NAME: "capstan-operator" });
    expect(env.filter((e) => e.value === "")).toEqual([]);
    await dryRunApply(admin, operator, ns);
  });

  it("the data-plane images are plain env values of the operator container, and the operator uses them", async () => {
    const objects = await render([
      ...MINIMAL,
      "gateway.image.repository=localhost/capstan/gateway",
      "gateway.image.tag=t1",
      "search.image.tag=t2",
      "scraper.image.tag=t3",
    ]);
    const operator = objects.find((o) => o.kind === "Deployment" && o.metadata.name.endsWith("-operator")) as Rendered;
    expect(envOf(operator)).toMatchObject({
      GATEWAY_IMAGE: "localhost/capstan/gateway:t1",
      SEARCH_IMAGE: "ghcr.io/capstan-dev/search:t2",
      SCRAPER_IMAGE: "ghcr.io/capstan-dev/scraper:t3",
    });
    const c = operatorConfig(objects);
    expect(pod(gatewayObjects(c, [])[0] as Rendered).containers[0]?.image).toBe("localhost/capstan/gateway:t1");
  });
});

describe("traffic", () => {
  it("the Ingress routes /api/v1 to the gateway and /v1/rag to search, with TLS from a Secret", async () => {
    const objects = await render([
      ...MINIMAL,
      "ingress.enabled=true",
      "ingress.className=traefik",
      "ingress.hosts[0]=capstan.test",
      "ingress.tls[0].secretName=capstan-tls",
      "ingress.tls[0].hosts[0]=capstan.test",
    ]);
    const ingress = one(objects, "Ingress");
    const spec = ingress.spec as {
      ingressClassName: string;
      tls: unknown[];
      rules: {
        host: string;
        http: { paths: { path: string; backend: { service: { name: string; port: { number: number } } } }[] };
      }[];
    };
    expect(spec.ingressClassName).toBe("traefik");
    expect(spec.tls).toEqual([{ secretName: "capstan-tls", hosts: ["capstan.test"] }]);
    expect(spec.rules).toHaveLength(1);
    expect(spec.rules[0]?.host).toBe("capstan.test");
    const c = operatorConfig(objects);
    const services = [...gatewayObjects(c, []), ...searchObjects(c)].filter((o) => o.kind === "Service");
    const routes = Object.fromEntries(
      (spec.rules[0]?.http.paths ?? []).map((p) => [
        p.path,
        `${p.backend.service.name}:${p.backend.service.port.number}`,
      ]),
    );
    const port = (name: string) =>
      (services.find((s) => s.metadata.name === name)?.spec as { ports: { port: number }[] } | undefined)?.ports[0]
        ?.port;
    expect(routes).toEqual({
      "/api/v1": `${GATEWAY_NAME}:${port(GATEWAY_NAME)}`,
      "/v1/rag": `${SEARCH_NAME}:${port(SEARCH_NAME)}`,
    });
    await dryRunApply(admin, ingress, ns);
  });

  it("an Ingress without hosts serves every host", async () => {
    const spec = one(await render([...MINIMAL, "ingress.enabled=true"]), "Ingress").spec as {
      rules: { host?: string }[];
    };
    expect(spec.rules).toHaveLength(1);
    expect(spec.rules[0]?.host).toBeUndefined();
  });

  it("the HTTPRoute attaches to the given Gateway (refused without one)", async () => {
    expect(await refused([...MINIMAL, "httpRoute.enabled=true"])).toContain("httpRoute.parentRefs");
    const objects = await render([
      ...MINIMAL,
      "httpRoute.enabled=true",
      "httpRoute.parentRefs[0].name=public",
      "httpRoute.parentRefs[0].namespace=gateway-system",
    ]);
    // The test API server has no Gateway API CRDs, so the route's shape is checked here, not applied.
    const route = one(objects, "HTTPRoute");
    expect(route.apiVersion).toBe("gateway.networking.k8s.io/v1");
    expect(route.spec).toMatchObject({
      parentRefs: [{ name: "public", namespace: "gateway-system" }],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/api/v1" } }],
          backendRefs: [{ name: GATEWAY_NAME, port: 80 }],
        },
        {
          matches: [{ path: { type: "PathPrefix", value: "/v1/rag" } }],
          backendRefs: [{ name: SEARCH_NAME, port: 80 }],
        },
      ],
    });
  });

  it("NetworkPolicies select the pods the operator really labels, and admit only their ports and peers", async () => {
    const objects = await render([...MINIMAL, "qdrant.deploy.enabled=true"]);
    const c = operatorConfig(objects);
    const podLabels = (o: Rendered) => (o as Workload).spec.template.metadata.labels;
    const gwLabels = podLabels(gatewayObjects(c, [])[0] as Rendered);
    const seLabels = podLabels(searchObjects(c)[0] as Rendered);
    type Policy = {
      podSelector: { matchLabels: Record<string, string> };
      ingress: { ports: { port: number }[]; from?: { podSelector: { matchLabels: Record<string, string> } }[] }[];
    };
    const policy = (name: string) => one(objects, "NetworkPolicy", name).spec as Policy;
    expect(gwLabels).toMatchObject(policy("capstan-gateway").podSelector.matchLabels);
    expect(policy("capstan-gateway").ingress).toEqual([{ ports: [{ port: c.gateway.port, protocol: "TCP" }] }]);
    expect(seLabels).toMatchObject(policy("capstan-search").podSelector.matchLabels);
    expect(policy("capstan-search").ingress).toEqual([{ ports: [{ port: c.search.port, protocol: "TCP" }] }]);
    const redisFrom = policy("capstan-redis").ingress[0]?.from?.[0]?.podSelector.matchLabels ?? {};
    expect(gwLabels).toMatchObject(redisFrom);
    expect(seLabels).not.toMatchObject(redisFrom);
    const qdrantFrom = policy("capstan-qdrant").ingress[0]?.from?.[0]?.podSelector.matchLabels ?? {};
    expect(seLabels).toMatchObject(qdrantFrom);
    expect(gwLabels).not.toMatchObject(qdrantFrom);
    const redisPod = podLabels(one(objects, "Deployment", "capstan-redis"));
    expect(redisPod).toMatchObject(policy("capstan-redis").podSelector.matchLabels);
    for (const o of objects.filter((o) => o.kind === "NetworkPolicy")) await dryRunApply(admin, o, ns);
    expect(objects.filter((o) => o.kind === "NetworkPolicy")).toHaveLength(5);
    expect(
      (await render([...MINIMAL, "networkPolicy.enabled=false"])).filter((o) => o.kind === "NetworkPolicy"),
    ).toEqual([]);
  });

  it("PodDisruptionBudgets cover each workload with more than one replica, selecting its real pods", async () => {
    const objects = await render([...MINIMAL, "gateway.replicas=3", "operator.replicas=2"]);
    const budgets = objects.filter((o) => o.kind === "PodDisruptionBudget");
    expect(budgets.map((b) => b.metadata.name).sort()).toEqual([`${release}-capstan-operator`, GATEWAY_NAME].sort());
    const gw = gatewayObjects(operatorConfig(objects), [])[0] as unknown as Workload;
    const selector = (one(objects, "PodDisruptionBudget", GATEWAY_NAME).spec as { selector: { matchLabels: object } })
      .selector.matchLabels;
    expect(gw.spec.template.metadata.labels).toMatchObject(selector);
    for (const b of budgets) await dryRunApply(admin, b, ns);
    const single = await render([...MINIMAL, "gateway.replicas=1", "operator.replicas=1"]);
    expect(single.filter((o) => o.kind === "PodDisruptionBudget")).toEqual([]);
  });
});

describe("ci/e2e-values.yaml (the local-install example)", () => {
  it("renders objects the API server accepts", async () => {
    const objects = await render([], [`${chartDir}ci/e2e-values.yaml`]);
    expect(objects.map((o) => o.kind)).toContain("Ingress");
    for (const o of objects) await dryRunApply(admin, o, ns);
    const c = operatorConfig(objects);
    expect(c.gateway.image).toBe("localhost/capstan/gateway:dev");
    expect(c.gateway.imagePullPolicy).toBe("Never");
    expect(c.search.persistence.claimName).toBe("capstan-search-data");
  });
});
