// charts/capstan's traffic objects with real helm: the Ingress and the HTTPRoute route the public
// paths to the Services the operator applies, the NetworkPolicies and PodDisruptionBudgets select
// the pods it really labels, search's public port and the console's admit the named ingress
// controller only and its addresses alone are trusted for X-Forwarded-For; all accepted by the real
// API server (server-side dry run), except the HTTPRoute (the test API server has no Gateway API CRDs).
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GATEWAY_NAME, SEARCH_NAME } from "../../operator/src/config.ts";
import { gatewayObjects, searchObjects } from "../../operator/src/translate/workloads.ts";
import { ChartRun, envOf, MINIMAL, one, type Rendered, type Workload } from "./chart-kit.ts";

const run = new ChartRun("chartt");
const release = run.release;

beforeAll(() => run.setup());
afterAll(() => run.cleanup());

describe("traffic", () => {
  it("the Ingress routes /api/v1 to the gateway and /v1/rag to search, with TLS from a Secret", async () => {
    const objects = await run.render([
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
    const c = run.operatorConfig(objects);
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
    await run.apply(ingress);
  });

  it("an Ingress without hosts serves every host", async () => {
    const spec = one(await run.render([...MINIMAL, "ingress.enabled=true"]), "Ingress").spec as {
      rules: { host?: string }[];
    };
    expect(spec.rules).toHaveLength(1);
    expect(spec.rules[0]?.host).toBeUndefined();
  });

  it("the HTTPRoute attaches to the given Gateway (refused without one)", async () => {
    expect(await run.refused([...MINIMAL, "httpRoute.enabled=true"])).toContain("httpRoute.parentRefs");
    const objects = await run.render([
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
    const objects = await run.render([...MINIMAL, "qdrant.deploy.enabled=true"]);
    const c = run.operatorConfig(objects);
    const podLabels = (o: Rendered) => (o as Workload).spec.template.metadata.labels;
    const gwLabels = podLabels(gatewayObjects(c, [])[0] as Rendered);
    const seLabels = podLabels(searchObjects(c)[0] as Rendered);
    type Policy = {
      podSelector: { matchLabels: Record<string, string> };
      ingress: { ports: { port: number }[]; from?: { podSelector: { matchLabels: Record<string, string> } }[] }[];
    };
    const policy = (name: string) => one(objects, "NetworkPolicy", name).spec as Policy;
    expect(gwLabels).toMatchObject(policy("capstan-gateway").podSelector.matchLabels);
    // The gateway: its public port from anywhere; its internal port (metrics, health) from pods of
    // the cluster only (no metricsFrom given), or from the metricsFrom peers when given.
    expect(policy("capstan-gateway").ingress).toEqual([
      { ports: [{ port: c.gateway.port, protocol: "TCP" }] },
      { ports: [{ port: c.gateway.internalPort, protocol: "TCP" }], from: [{ namespaceSelector: {} }] },
    ]);
    const scrapers = { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } };
    const values = join(mkdtempSync(join(tmpdir(), "capstan-np-")), "values.yaml");
    writeFileSync(values, JSON.stringify({ networkPolicy: { metricsFrom: [scrapers] } }));
    const narrowed = await run.render(MINIMAL, [values]);
    // ... and the console (on by default), whose usage page reads every replica's metrics.
    const gatewayInternal = (one(narrowed, "NetworkPolicy", "capstan-gateway").spec as Policy).ingress[1]?.from;
    expect(gatewayInternal?.[0]).toEqual(scrapers);
    expect(gatewayInternal?.[1]?.podSelector.matchLabels).toMatchObject({
      "app.kubernetes.io/name": "capstan-console",
    });
    // ... and the operator, which reads budget spend and upstream breakers there for status.
    expect(gatewayInternal?.[2]?.podSelector.matchLabels).toMatchObject({
      "app.kubernetes.io/name": "capstan-operator",
    });
    // ... and the release's `helm test` Pod (tests.enabled), which checks /readyz.
    expect(gatewayInternal?.[3]?.podSelector.matchLabels).toMatchObject({ "app.kubernetes.io/name": "capstan-test" });
    expect(gatewayInternal).toHaveLength(4);
    expect(seLabels).toMatchObject(policy("capstan-search").podSelector.matchLabels);
    // The public port from anywhere; the internal port (documents API, the internal token's
    // search, metrics, health) from the operator's pods (ingestion), the gateway's (retrieval) and,
    // no metricsFrom given, from pods of the cluster (Prometheus), or from the metricsFrom peers
    // when given (test/monitoring/chart-scrape.test.ts checks a scrape gets in).
    const [publicRule, internalRule] = policy("capstan-search").ingress;
    expect(publicRule).toEqual({ ports: [{ port: c.search.port, protocol: "TCP" }] });
    expect(internalRule?.ports).toEqual([{ port: c.search.internalPort, protocol: "TCP" }]);
    expect(internalRule?.from).toHaveLength(3);
    expect(internalRule?.from?.[2]).toEqual({ namespaceSelector: {} });
    // ... or from the metricsFrom peers and the release's `helm test` Pod.
    const searchNarrowed = (one(narrowed, "NetworkPolicy", "capstan-search").spec as Policy).ingress[1]?.from;
    expect(searchNarrowed?.slice(2, 3)).toEqual([scrapers]);
    expect(searchNarrowed?.[3]?.podSelector.matchLabels).toMatchObject({ "app.kubernetes.io/name": "capstan-test" });
    expect(searchNarrowed).toHaveLength(4);
    const operatorPod = podLabels(one(objects, "Deployment", `${release}-capstan-operator`));
    expect(operatorPod).toMatchObject(internalRule?.from?.[0]?.podSelector.matchLabels ?? { none: "x" });
    expect(gwLabels).not.toMatchObject(internalRule?.from?.[0]?.podSelector.matchLabels ?? {});
    expect(gwLabels).toMatchObject(internalRule?.from?.[1]?.podSelector.matchLabels ?? { none: "x" });
    expect(operatorPod).not.toMatchObject(internalRule?.from?.[1]?.podSelector.matchLabels ?? {});
    const redisFrom = policy("capstan-redis").ingress[0]?.from?.map((f) => f.podSelector.matchLabels) ?? [];
    expect(gwLabels).toMatchObject(redisFrom[0] ?? { none: "x" });
    // Search limits requests per key in the same Redis.
    expect(seLabels).toMatchObject(redisFrom[1] ?? { none: "x" });
    // The console keeps its sessions there.
    const consolePod = podLabels(one(objects, "Deployment", `${release}-capstan-console`));
    expect(redisFrom.some((peer) => Object.entries(peer).every(([k, v]) => consolePod[k] === v))).toBe(true);
    // ... and the platform Scraper (its shared crawl jobs).
    expect(redisFrom).toHaveLength(4);
    const qdrantFrom = policy("capstan-qdrant").ingress[0]?.from?.[0]?.podSelector.matchLabels ?? {};
    expect(seLabels).toMatchObject(qdrantFrom);
    expect(gwLabels).not.toMatchObject(qdrantFrom);
    const redisPod = podLabels(one(objects, "Deployment", "capstan-redis"));
    expect(redisPod).toMatchObject(policy("capstan-redis").podSelector.matchLabels);
    for (const o of objects.filter((o) => o.kind === "NetworkPolicy")) await run.apply(o);
    // gateway, search, operator, dev Redis, dev Qdrant and the console (on by default).
    expect(objects.filter((o) => o.kind === "NetworkPolicy")).toHaveLength(6);
    expect(
      (await run.render([...MINIMAL, "networkPolicy.enabled=false"])).filter((o) => o.kind === "NetworkPolicy"),
    ).toEqual([]);
  });

  it("search's public port and the console's admit only the named ingress controller, whose ipBlocks alone are trusted", async () => {
    type Policy = { ingress: { ports: { port: number }[]; from?: Record<string, unknown>[] }[] };
    const publicFrom = (objects: Rendered[], name: string) =>
      (one(objects, "NetworkPolicy", name).spec as Policy).ingress[0]?.from;
    const consoleName = `${release}-capstan-console`;
    const nginx = [
      "networkPolicy.ingressController.namespaceSelector.kubernetes\\.io/metadata\\.name=ingress-nginx",
      "networkPolicy.ingressController.podSelector.app\\.kubernetes\\.io/name=ingress-nginx",
    ];
    const named = await run.render([
      ...MINIMAL,
      "console.enabled=true",
      ...nginx,
      "networkPolicy.ingressController.ipBlocks[0]=10.1.0.7/32",
      "networkPolicy.searchClientsFrom[0].namespaceSelector.matchLabels.team=search-users",
    ]);
    const controller = [
      {
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "ingress-nginx" } },
        podSelector: { matchLabels: { "app.kubernetes.io/name": "ingress-nginx" } },
      },
      { ipBlock: { cidr: "10.1.0.7/32" } },
    ];
    expect(publicFrom(named, "capstan-search")).toEqual([
      ...controller,
      { namespaceSelector: { matchLabels: { team: "search-users" } } },
    ]);
    expect(publicFrom(named, consoleName)).toEqual(controller);
    // Only the controller's own addresses are believed for X-Forwarded-For, by search and the console.
    expect(run.operatorConfig(named).search.trustedProxies).toBe("10.1.0.7/32");
    expect(envOf(one(named, "Deployment", consoleName)).CAPSTAN_TRUSTED_PROXIES).toBe("10.1.0.7/32");
    for (const o of named.filter((o) => o.kind === "NetworkPolicy")) await run.apply(o);
    // Pods by label in any namespace; an explicit trust list (an in-cluster controller's pod range) wins.
    const byPod = await run.render([
      ...MINIMAL,
      "networkPolicy.ingressController.podSelector.app=traefik",
      "search.trustedProxies=10.244.0.0/16",
    ]);
    expect(publicFrom(byPod, "capstan-search")).toEqual([
      { namespaceSelector: {}, podSelector: { matchLabels: { app: "traefik" } } },
    ]);
    expect(run.operatorConfig(byPod).search.trustedProxies).toBe("10.244.0.0/16");
    // Trusting a proxy while every pod may call the port would let any pod claim any address.
    expect(await run.refused([...MINIMAL, "search.trustedProxies=198.18.0.0/15"])).toContain(
      "networkPolicy.ingressController names no ingress controller",
    );
    expect(
      await run.refused([...MINIMAL, "console.enabled=true", "console.trustedProxies[0]=198.18.0.0/15"]),
    ).toContain("networkPolicy.ingressController names no ingress controller");
    // Without the chart's policies (no enforcing CNI), the choice is the platform team's.
    const unguarded = await run.render([...MINIMAL, "networkPolicy.enabled=false", "search.trustedProxies=10.0.0.1"]);
    expect(run.operatorConfig(unguarded).search.trustedProxies).toBe("10.0.0.1");
  });

  it("PodDisruptionBudgets cover each workload with more than one replica, selecting its real pods", async () => {
    const objects = await run.render([...MINIMAL, "gateway.replicas=3", "operator.replicas=2"]);
    const budgets = objects.filter((o) => o.kind === "PodDisruptionBudget");
    expect(budgets.map((b) => b.metadata.name).sort()).toEqual([`${release}-capstan-operator`, GATEWAY_NAME].sort());
    const gw = gatewayObjects(run.operatorConfig(objects), [])[0] as unknown as Workload;
    const selector = (one(objects, "PodDisruptionBudget", GATEWAY_NAME).spec as { selector: { matchLabels: object } })
      .selector.matchLabels;
    expect(gw.spec.template.metadata.labels).toMatchObject(selector);
    for (const b of budgets) await run.apply(b);
    const single = await run.render([...MINIMAL, "gateway.replicas=1", "operator.replicas=1"]);
    expect(single.filter((o) => o.kind === "PodDisruptionBudget")).toEqual([]);
  });
});
