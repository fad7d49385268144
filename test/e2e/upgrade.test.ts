// An upgrade from the previous released version (support/previous-release.ts: its chart and
// images, built from the commit it was released from and published to the node's registry) to
// this tree's release, under a light load. A release of the previous version is installed in its
// own namespace beside the platform release (scoped to capstan-demo, as releases.test.ts does, so
// both may be installed; the CustomResourceDefinitions are the platform release's), serving its
// own tenant namespace through the ingress. It runs as a production install does: two gateways and
// two searches on a Redis and a Qdrant outside the cluster (host processes on the node's bridge
// address), so every Deployment rolls one pod at a time. (The in-chart dev Redis and Qdrant, and
// search's embedded store, run one Recreate pod each: an upgrade that restarts them is a pause.)
// With chat and search answering, `helm upgrade` moves it to this tree's chart while 5 requests a
// second go through the ingress; once every Deployment of the release runs the new template and is
// Ready, no request may have failed, and the keys, the knowledge base and a QPM limit made before
// the upgrade still hold. Then a rollout of this tree's release (a changed pod template) under the
// same load, again with no failed request. When the previous release cannot be upgraded from
// without failures (PREVIOUS_RELEASE.gap), the upgrade is skipped, saying why, and the rollout
// runs on this tree's release installed directly. The release, its namespaces and the engines are
// removed at the end, so the next file's install watches every namespace again.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { helm } from "../ground/helm.ts";
import type { TestKube } from "../ground/kube-client.ts";
import { net } from "../ground/node-config.ts";
import { type QdrantServer, startQdrant } from "../ground/qdrant.ts";
import { type RedisClusterGround, startRedisCluster } from "../ground/redis-topologies.ts";
import { apply, condition, deploymentReady, e2eKube, eventually, get, list, remove } from "./support/kube.ts";
import { DEMO_NS, ensurePlatform, keyOf } from "./support/platform.ts";
import { PREVIOUS_RELEASE, publishPrevious } from "./support/previous-release.ts";
import type { Release } from "./support/publish.ts";
import { chartArgs, PULL_SECRET, pullSecret, release } from "./support/release.ts";
import { type LoadResult, steadyLoad } from "./support/steady-load.ts";

const CR = "capstan.dev/v1alpha1";
const UP = { release: "capstan-up", ns: "capstan-up-system", tenant: "capstan-up-demo", host: "capstan-up.test" };
const FACT = "The lighthouse keeper winds the clock every Tuesday at noon.";
const QUESTION = "When does the lighthouse keeper wind the clock?";
const LIMITED_QPM = 2;
const REDIS_PASSWORD = randomBytes(16).toString("hex");
const REDIS_SECRET = "capstan-up-redis";

let kube: TestKube;
let home: string;
let kc: string[];
let previous: Release;
const keys = { chat: "", limited: "", search: "" };
let redis: RedisClusterGround | undefined;
let qdrant: QdrantServer | undefined;

/** A request through the ingress's plain HTTP port, by host name. */
async function viaIngress(path: string, key: string, body: unknown) {
  const res = await request(`${inject("e2eIngressHttp")}${path}`, {
    method: "POST",
    headers: { host: UP.host, authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    headersTimeout: 60_000,
    bodyTimeout: 60_000,
  });
  return { status: res.statusCode, body: await res.body.text() };
}

const chat = (key: string) =>
  viaIngress("/api/v1/chat/completions", key, {
    model: "lighthouse",
    messages: [{ role: "user", content: QUESTION }],
  });
const search = (key: string) =>
  viaIngress("/v1/rag/search", key, { text: QUESTION, knowledgeIds: ["kb_up_lighthouse"], minSimilarity: 0.3 });

/**
 * The release's values, the same at install and upgrade: the external Redis Cluster and Qdrant, two
 * gateways and two searches with small requests (2 CPUs), no console.
 */
function values(): string[] {
  if (!redis || !qdrant) throw new Error("the Redis Cluster and Qdrant are not running");
  const set = [`imagePullSecrets[0].name=${PULL_SECRET}`, "installCRDs=false", "redis.deploy.enabled=false"];
  set.push(
    "redis.mode=cluster",
    ...redis.nodes.map((n, i) => `redis.cluster.nodes[${i}]=${n}`),
    `redis.passwordSecret.name=${REDIS_SECRET}`,
    `qdrant.url=${qdrant.url}`,
    `operator.watchNamespaces[0]=${UP.tenant}`,
    "operator.replicas=1",
    "gateway.replicas=2",
    "gateway.resources.requests.cpu=50m",
    "search.replicas=2",
    "search.resources.requests.cpu=50m",
    "console.enabled=false",
    "scraping.enabled=false",
    "ingress.enabled=true",
    "ingress.className=traefik",
    `ingress.hosts[0]=${UP.host}`,
    `networkPolicy.ingressController.ipBlocks[0]=${net.hostIp}/32`,
    `admission.namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=${UP.tenant}`,
  );
  return set.flatMap((s) => ["--set", s]);
}

/** `helm upgrade --install` of `r`'s chart and images (the previous release's, or this tree's). */
async function install(r: Release, extra: string[] = []): Promise<void> {
  const args = ["upgrade", "--install", UP.release, ...chartArgs(r), "-n", UP.ns, "--wait", "--timeout", "480s"];
  const res = await helm(args.concat(kc, values(), ...extra.map((s) => ["--set", s])), home, 540_000);
  expect(res.code, `${res.stderr}\n${res.stdout}`).toBe(0);
}

async function tenantResources(): Promise<void> {
  const meta = (name: string) => ({ name, namespace: UP.tenant });
  await apply(kube, {
    apiVersion: CR,
    kind: "KnowledgeBase",
    metadata: meta("lighthouse"),
    spec: {
      knowledgeId: "kb_up_lighthouse",
      embedding: { provider: "local", model: "all-MiniLM-L6-v2" },
      sources: [{ name: "Lighthouse", text: FACT }],
    },
  });
  await apply(kube, {
    apiVersion: CR,
    kind: "Agent",
    metadata: meta("lighthouse"),
    spec: { knowledge: { knowledgeIds: ["kb_up_lighthouse"], maxResults: 2, minSimilarity: 0.3 } },
  });
  for (const [name, qpm] of [
    ["up-chat", 6000],
    ["up-limited", LIMITED_QPM],
  ] as const) {
    await apply(kube, {
      apiVersion: CR,
      kind: "AccessChannel",
      metadata: meta(name),
      spec: { channelName: name, agentRef: { name: "lighthouse" }, qpm },
    });
  }
  await apply(kube, {
    apiVersion: CR,
    kind: "SearchKey",
    metadata: meta("up-search"),
    spec: {
      keyName: "upgrade",
      knowledgeIds: ["kb_up_lighthouse"],
      permissions: ["read"],
      allowedCIDRs: ["127.0.0.1"],
    },
  });
}

/**
 * Every Deployment of the release at its newest template, all replicas updated and Ready, none old
 * left and no pod still stopping; the gateway's and search's templates with this tree's images and
 * `marker` (when given).
 */
async function rolledOut(images: Record<string, string>, marker = ""): Promise<string[]> {
  return eventually(
    "every Deployment of the upgraded release rolled out",
    async () => {
      const deployments = await list(kube, "Deployment", "apps/v1", UP.ns);
      const names: string[] = [];
      for (const d of deployments) {
        const want = (d.spec?.replicas as number | undefined) ?? 1;
        const s = (d.status ?? {}) as Record<string, number>;
        const current = (s.observedGeneration ?? 0) >= (d.metadata.generation ?? 1);
        const done = s.updatedReplicas === want && s.readyReplicas === want && s.availableReplicas === want;
        if (!current || !done || s.replicas !== want) return undefined;
        names.push(d.metadata.name);
      }
      // The old pods have stopped too: the load goes on through their drain, where a request is
      // most likely lost (a Deployment counts a terminating pod out before it has stopped).
      const pods = await list(kube, "Pod", "v1", UP.ns);
      if (pods.some((p) => p.metadata.deletionTimestamp)) return undefined;
      // The operator's data plane runs this tree's images (the operator rolls them after its own upgrade).
      for (const name of ["gateway", "search"]) {
        const d = deployments.find((x) => x.metadata.name === `capstan-${name}`);
        const spec = d?.spec as { template: { spec: { containers: { image: string }[] } } } | undefined;
        if (spec?.template.spec.containers[0]?.image !== images[name]) return undefined;
        if (!JSON.stringify(spec?.template).includes(marker)) return undefined;
      }
      return names;
    },
    600_000,
    2_000,
  );
}

/**
 * Runs `action` (an upgrade, waited for until rolled out) under 5 requests a second, chat and
 * search in turn (bounded to 15 minutes by itself), and prints what the load saw.
 */
async function underLoad(what: string, action: () => Promise<string[]>): Promise<LoadResult> {
  const load = steadyLoad(
    [
      { name: "chat", send: () => chat(keys.chat) },
      { name: "search", send: () => search(keys.search) },
    ],
    { everyMs: 200, maxMs: 900_000 },
  );
  const started = Date.now();
  let result: LoadResult;
  try {
    const deployments = await action();
    console.log(`[e2e] ${what} rolled out in ${Date.now() - started} ms: ${deployments.join(", ")}`);
  } finally {
    result = await load.stop();
  }
  console.log(
    `[e2e] load during the ${what}: ${result.sent} sent in ${result.durationMs} ms, ` +
      `${result.ok.chat} chat and ${result.ok.search} search answered 200, ${result.failures.length} failed`,
  );
  return result;
}

/** The names of the release's gateway and search pods. */
async function dataPlanePods(): Promise<string[]> {
  const pods = await list(kube, "Pod", "v1", UP.ns);
  return pods
    .map((p) => p.metadata.name)
    .filter((name) => name.startsWith("capstan-gateway-") || name.startsWith("capstan-search-"));
}

/** Chat answers from the knowledge base and search finds it, through the ingress with the release's keys. */
async function expectKnowledgeAnswers(): Promise<void> {
  const answer = await chat(keys.chat);
  expect(answer.status, answer.body).toBe(200);
  expect(answer.body).toContain("Tuesday at noon");
  const hits = await search(keys.search);
  expect(hits.status, hits.body).toBe(200);
  expect(hits.body).toContain("lighthouse keeper");
}

const limitBurst = async (key: string) => [
  (await chat(key)).status,
  (await chat(key)).status,
  (await chat(key)).status,
];

/** Why the upgrade from the previous release does not run here, if it does not (PREVIOUS_RELEASE.gap). */
const skipped = process.env.CAPSTAN_E2E_UPGRADE === "1" ? undefined : PREVIOUS_RELEASE.gap;
if (skipped) {
  console.warn(
    `[e2e] upgrade.test.ts: the upgrade from ${PREVIOUS_RELEASE.version} is skipped, since it cannot be free of failed requests: ${skipped}. CAPSTAN_E2E_UPGRADE=1 runs it anyway. The rollout of this tree's release runs.`,
  );
}

/** The release's tenant, the Redis password Secret and the pull Secret; then `r` installed, serving, with its keys. */
async function setUp(r: Release): Promise<void> {
  for (const ns of [UP.tenant, UP.ns])
    await apply(kube, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
  await apply(kube, pullSecret(UP.ns) as never);
  await apply(kube, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: REDIS_SECRET, namespace: UP.ns },
    ...({ stringData: { password: REDIS_PASSWORD } } as object),
  });
  await install(r);
  await tenantResources();
  await deploymentReady(kube, UP.ns, "capstan-gateway");
  await deploymentReady(kube, UP.ns, "capstan-search");
  await eventually("KnowledgeBase lighthouse searchable", async () => {
    const kb = await get(kube, "KnowledgeBase", CR, "lighthouse", UP.tenant);
    return (kb?.status?.chunks as number) > 0 && condition(kb, "Ready")?.status === "True" ? kb : undefined;
  });
  keys.chat = await eventually("up-chat key", () => keyOf(kube, "AccessChannel", "up-chat", UP.tenant));
  keys.limited = await eventually("up-limited key", () => keyOf(kube, "AccessChannel", "up-limited", UP.tenant));
  keys.search = await eventually("up-search key", () => keyOf(kube, "SearchKey", "up-search", UP.tenant));
  // Serving through the ingress, both paths: Traefik adds a path's route only once its Service has
  // ready endpoints, and applies what it watched a moment after the Deployment is Ready (a search
  // sent in between met Traefik's own 404).
  await eventually("chat answered through the ingress", async () =>
    (await chat(keys.chat)).status === 200 ? true : undefined,
  );
  await eventually("search answered through the ingress", async () =>
    (await search(keys.search)).status === 200 ? true : undefined,
  );
}

describe("upgrades under load", () => {
  beforeAll(async () => {
    kube = e2eKube();
    home = mkdtempSync(join(tmpdir(), "capstan-e2e-upgrade-"));
    kc = ["--kubeconfig", inject("e2eKubeconfig")];
    [redis, qdrant] = await Promise.all([
      startRedisCluster({ password: REDIS_PASSWORD, host: net.hostIp }),
      startQdrant({ host: net.hostIp }),
    ]);
    if (!skipped) previous = publishPrevious(release().registry, join(home, "previous"));
    // A second release needs the platform release scoped to its own namespace (releases.test.ts).
    await apply(kube, { apiVersion: "v1", kind: "Namespace", metadata: { name: DEMO_NS } });
    await ensurePlatform(kube, home, [`operator.watchNamespaces[0]=${DEMO_NS}`]);
  }, 900_000);

  afterAll(async () => {
    if (kc) await helm(["uninstall", UP.release, "-n", UP.ns, "--wait", ...kc], home, 180_000).catch(() => {});
    if (kube) {
      await remove(kube, "Namespace", "v1", UP.tenant).catch(() => {});
      await remove(kube, "Namespace", "v1", UP.ns).catch(() => {});
    }
    await Promise.allSettled([redis?.stop(), qdrant?.stop()]);
    if (home) rmSync(home, { recursive: true, force: true });
  }, 300_000);

  describe(`upgrade from the previous release (${PREVIOUS_RELEASE.version})`, () => {
    it.skipIf(Boolean(skipped))(
      "moves to this tree's chart under load with no failed request, keeping keys, knowledge and limits",
      async () => {
        expect(previous.chartVersion).not.toBe(release().chartVersion);
        await setUp(previous);
        await expectKnowledgeAnswers();
        expect(await limitBurst(keys.limited)).toEqual([200, 200, 429]);
        const limitedAt = Date.now();

        // The previous release's own pods must stop under the load: how they drain is what an
        // upgrade from it risks (0.1.0's search lost requests there). Its gateway and search images
        // may be byte-identical to this tree's (the builds are reproducible, and 0.2.0 -> 0.3.0
        // changed neither), so the upgrade also changes both pod templates, as a release with new
        // images would, and every one of those pods is replaced.
        const oldPods = await dataPlanePods();
        expect(oldPods.length).toBeGreaterThanOrEqual(4);
        const marker = `upgrade-${Date.now()}`;
        const result = await underLoad(`upgrade ${PREVIOUS_RELEASE.version} -> ${release().chartVersion}`, async () => {
          await install(release(), [
            `gateway.podAnnotations.capstan-e2e=${marker}`,
            `search.podAnnotations.capstan-e2e=${marker}`,
          ]);
          return rolledOut(release().images, marker);
        });
        const stayed = (await dataPlanePods()).filter((name) => oldPods.includes(name));
        expect(stayed, "pods of the previous release still running after the upgrade").toEqual([]);
        // Soft: what was made before the upgrade is checked whatever the load saw.
        expect.soft(result.failures, JSON.stringify(result.failures.slice(0, 20))).toEqual([]);
        expect(result.ok.chat).toBeGreaterThan(0);
        expect(result.ok.search).toBeGreaterThan(0);

        // What was made before the upgrade still holds: the same keys, the knowledge base's answer, the limit.
        await expectKnowledgeAnswers();
        // The sliding window (one minute) of the burst before the upgrade has passed.
        await new Promise((r) => setTimeout(r, Math.max(0, limitedAt + 61_000 - Date.now())));
        expect(await limitBurst(keys.limited)).toEqual([200, 200, 429]);
      },
    );
  });

  describe("a rollout of this tree's release", () => {
    it("rolls the gateway and search one pod at a time under load with no failed request", async () => {
      // Set up by the upgrade above, or here when that did not run.
      if (!keys.search) await setUp(release());
      // A changed value the operator renders into both pod templates: every replica is replaced.
      const marker = `rollout-${Date.now()}`;
      const result = await underLoad("rollout of this tree's release", async () => {
        await install(release(), [
          `gateway.podAnnotations.capstan-e2e=${marker}`,
          `search.podAnnotations.capstan-e2e=${marker}`,
        ]);
        return rolledOut(release().images, marker);
      });
      expect(result.failures, JSON.stringify(result.failures.slice(0, 20))).toEqual([]);
      expect(result.ok.chat).toBeGreaterThan(0);
      expect(result.ok.search).toBeGreaterThan(0);
    });
  });
});
