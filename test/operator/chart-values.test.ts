// charts/capstan's values with real helm: the schema rejects wrong types and unknown keys, settings
// that cannot work together fail at render time with the fix in the message, and each optional
// part (dev Redis, dev Qdrant, search's claim, pod settings, OTEL) renders objects the real API
// server accepts (server-side dry run) that the operator's own translators turn into what it applies.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseResource, type Scraper } from "@capstan/shared/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { GATEWAY_NAME, SEARCH_NAME } from "../../operator/src/config.ts";
import { k8sEnv } from "../../operator/src/translate/common.ts";
import { scraperObjects } from "../../operator/src/translate/scraper.ts";
import { gatewayObjects, searchObjects } from "../../operator/src/translate/workloads.ts";
import { loadGatewayConfig } from "../../services/gateway/src/config.ts";
import { loadScraperConfig } from "../../services/scraper/src/config.ts";
import { loadSearchConfig } from "../../services/search/src/config.ts";
import { helm } from "../ground/helm.ts";
import { rawExamples } from "../ground/kube-client.ts";
import {
  ChartRun,
  type Container,
  chart,
  containerEnv,
  envOf,
  KUBE_VERSION,
  MINIMAL,
  one,
  operatorOf,
  pod,
  type Rendered,
  type Workload,
} from "./chart-kit.ts";

const run = new ChartRun("chartv");
const ns = run.ns;
const chartDir = fileURLToPath(new URL("../../charts/capstan/", import.meta.url));
const render = (set: string[], files: string[] = []) => run.render(set, files);
const refused = (set: string[]) => run.refused(set);
const operatorConfig = (objects: Rendered[]) => run.operatorConfig(objects);

beforeAll(() => run.setup());
afterAll(() => run.cleanup());

describe("values.schema.json", () => {
  it("rejects a wrong type, naming the key", async () => {
    const err = await refused([...MINIMAL, "gateway.replicas=two"]);
    expect(err).toContain("gateway.replicas");
    expect(err).toMatch(/Expected: integer, given: string/);
  });

  it("helm lint --strict fails on it too, naming the key", async () => {
    const args = ["lint", "--strict", chart, "--kube-version", KUBE_VERSION, "--set", "redis.deploy.enabled=true"];
    const res = await helm([...args, "--set", "gateway.replicas=two"], run.home);
    expect(res.code).not.toBe(0);
    expect(res.stdout).toContain(
      "[ERROR] values.yaml: - gateway.replicas: Invalid type. Expected: integer, given: string",
    );
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
    for (const o of objects.filter((o) => o.metadata.name === "capstan-redis")) await run.apply(o);
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
    for (const o of objects.filter((o) => o.metadata.name.startsWith("capstan-qdrant"))) await run.apply(o);
  });

  it("an external Qdrant behind a private CA: the bundle is mounted into search (one source only)", async () => {
    const url = "https://qdrant.db:6333";
    const objects = await render([...MINIMAL, `qdrant.url=${url}`, "qdrant.caSecret.name=qdrant-tls"]);
    const search = searchObjects(operatorConfig(objects))[0] as Rendered;
    expect(envOf(search).QDRANT_URL).toBe(url);
    expect(envOf(search).QDRANT_CA_FILE).toMatch(/\/ca\.crt$/);
    expect(JSON.stringify(pod(search).volumes)).toContain('"secretName":"qdrant-tls"');
    const both = [...MINIMAL, `qdrant.url=${url}`, "qdrant.caSecret.name=a", "qdrant.caConfigMap.name=b"];
    expect(await refused(both)).toContain("not both");
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
    await run.apply(claim);
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
    "otel.resourceAttributes.team=ai platform",
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
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=staging,team=ai%20platform",
    });
    expect(Object.keys(env)).not.toContain("DROPPED");
    const search = searchObjects(c)[0] as unknown as Workload;
    expect(search.spec.template.spec.nodeSelector).toEqual({ pool: "data" });
    expect(envOf(search).OTEL_SERVICE_NAME).toBe(SEARCH_NAME);
    expect(c.scraper.nodeSelector).toEqual({ pool: "browsers" });
  });

  it("the operator's own Deployment, with no empty variable", async () => {
    const objects = await render(set);
    const operator = operatorOf(objects);
    expect(pod(operator)).toMatchObject({ nodeSelector: { pool: "system" }, terminationGracePeriodSeconds: 40 });
    const env = pod(operator).containers[0]?.env ?? [];
    expect(envOf(operator)).toMatchObject({
      OPERATOR_MARK: "yes",
      OTEL_SERVICE_NAME: "capstan-operator",
      // The chart's template and the operator's translator encode the attributes alike.
      OTEL_RESOURCE_ATTRIBUTES: envOf(gatewayObjects(run.operatorConfig(objects), [])[0] as Rendered)
        .OTEL_RESOURCE_ATTRIBUTES,
    });
    expect(env.filter((e) => e.value === "")).toEqual([]);
    // The downward API's variables behind the traces' k8s.* attributes, as the operator's
    // translator gives the data plane's containers.
    expect(env.filter((e) => e.name.startsWith("K8S_"))).toEqual(k8sEnv(operator.metadata.name, "operator"));
    await run.apply(operator);
  });

  it("the console's Deployment traces like the rest, with the same variables", async () => {
    const objects = await render(set);
    const console = objects.find((o) => o.kind === "Deployment" && o.metadata.name.endsWith("-console"));
    if (!console) throw new Error("no console Deployment rendered");
    expect(envOf(console)).toMatchObject({
      OTEL_SERVICE_NAME: "capstan-console",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector.observability:4318",
      OTEL_RESOURCE_ATTRIBUTES: envOf(operatorOf(objects)).OTEL_RESOURCE_ATTRIBUTES,
    });
    const env = pod(console).containers[0]?.env ?? [];
    expect(env.filter((e) => e.name.startsWith("K8S_"))).toEqual(k8sEnv(console.metadata.name, "console"));
  });

  it("the console's pods keep serving 5 s after they are told to stop, inside their grace period", async () => {
    const objects = await render(set);
    const console = objects.find((o) => o.kind === "Deployment" && o.metadata.name.endsWith("-console"));
    if (!console) throw new Error("no console Deployment rendered");
    const spec = pod(console) as unknown as {
      terminationGracePeriodSeconds: number;
      containers: { lifecycle?: { preStop?: { sleep?: { seconds: number } } } }[];
    };
    expect(spec.containers[0]?.lifecycle?.preStop?.sleep?.seconds).toBe(5);
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThan(5);
  });

  it("the data-plane images are plain env values of the operator container, and the operator uses them", async () => {
    const objects = await render([
      ...MINIMAL,
      "gateway.image.repository=localhost/capstan/gateway",
      "gateway.image.tag=t1",
      "search.image.tag=t2",
      "scraper.image.tag=t3",
    ]);
    const operator = operatorOf(objects);
    expect(envOf(operator)).toMatchObject({
      GATEWAY_IMAGE: "localhost/capstan/gateway:t1",
      SEARCH_IMAGE: "ghcr.io/capstan-dev/search:t2",
      SCRAPER_IMAGE: "ghcr.io/capstan-dev/scraper:t3",
    });
    const c = operatorConfig(objects);
    expect(pod(gatewayObjects(c, [])[0] as Rendered).containers[0]?.image).toBe("localhost/capstan/gateway:t1");
  });
});

/**
 * A container's environment as the kubelet would give it: literal values, a stand-in for each
 * Secret reference, and $(VAR) expanded from variables listed before (Kubernetes' rule).
 */
describe("the processes accept the environment the operator renders from the chart", () => {
  it("gateway, search and both scraper containers parse their config (nothing exits with status 2)", async () => {
    const objects = await render([...MINIMAL, "redis.passwordSecret.name=redis-auth"]);
    const c = operatorConfig(objects);
    const gateway = pod(gatewayObjects(c, [])[0] as Rendered).containers[0] as Container;
    const gw = loadGatewayConfig(containerEnv(gateway));
    expect(gw.namespace).toBeUndefined();
    expect(gw.redisUrl).toBe(`redis://:s3cret-0123456789abcdef@capstan-redis.${ns}.svc:6379`);
    const search = pod(searchObjects(c)[0] as Rendered).containers[0] as Container;
    const se = loadSearchConfig(containerEnv(search));
    expect(se.qdrant.url).toBeUndefined();
    expect(se.dataDir).toBe(c.search.dataDir);
    const raw = rawExamples().find((o) => o.kind === "Scraper");
    if (!raw) throw new Error("examples/ has no Scraper");
    const scraper = { ...parseResource(raw), metadata: { ...raw.metadata, uid: "0000-1111" } } as Scraper;
    for (const container of pod(scraperObjects(scraper, c)[0] as Rendered).containers) {
      expect(() => loadScraperConfig(containerEnv(container)), container.name).not.toThrow();
    }
  });
});

describe("the platform Scraper (scraping.platformScraper)", () => {
  it("is the Scraper the default scraping URL names, created by a hook, with the platform's key when one is set", async () => {
    const defaults = await render(["redis.deploy.enabled=true"]);
    const scraper = one(defaults, "Scraper", "capstan-scraper");
    expect(scraper.metadata.namespace).toBe(ns);
    expect(scraper.metadata.annotations?.["helm.sh/hook"]).toBe("post-install,post-upgrade");
    await run.apply(scraper);
    // The operator's default scraping URL is that Scraper's Service.
    expect(operatorConfig(defaults).platformScraper).toBe("capstan-scraper");
    const keyed = await render(["redis.deploy.enabled=true", "scraping.apiKeySecret.name=scraping-key"]);
    expect(one(keyed, "Scraper").spec?.auth).toEqual({
      enabled: true,
      apiKeySecretRef: { name: "scraping-key", key: "apiKey" },
    });
    // With a scraping URL of its own, or create off, the chart creates none.
    for (const set of ["scraping.url=http://scraper.example:3002", "scraping.platformScraper.create=false"]) {
      expect((await render(["redis.deploy.enabled=true", set])).filter((o) => o.kind === "Scraper")).toEqual([]);
    }
  });
});

describe("ci/e2e-values.yaml (the local-install example)", () => {
  it("renders objects the API server accepts", async () => {
    const objects = await render([], [`${chartDir}ci/e2e-values.yaml`]);
    expect(objects.map((o) => o.kind)).toContain("Ingress");
    for (const o of objects) await run.apply(o);
    const c = operatorConfig(objects);
    expect(c.gateway.image).toBe("localhost/capstan/gateway:dev");
    expect(c.gateway.imagePullPolicy).toBe("Never");
    expect(c.search.persistence.claimName).toBe("capstan-search-data");
    // Only the node's Traefik (its address) is believed for X-Forwarded-For, never the pod range.
    expect(c.search.trustedProxies).toBe("198.18.0.1/32");
  });
});
