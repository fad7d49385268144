// Two releases of Capstan side by side on the node, and `helm test` on each. The platform release
// (capstan in capstan-system) is scoped to capstan-demo for this file, as a platform team scopes a
// release before adding a second one (an install beside a release that watches every namespace is
// refused: test/operator/chart-releases.test.ts). A second release, in its own namespace, watching
// its own tenant namespace, with its own Ingress host, then serves chat and search through the
// ingress with its own keys, and each release's gateway and search refuse the other's keys. The
// second release is uninstalled at the end, so the next file's install watches every namespace again.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Agent, fetch, request } from "undici";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { helm } from "../ground/helm.ts";
import type { TestKube } from "../ground/kube-client.ts";
import { net } from "../ground/node-config.ts";
import { apply, condition, deploymentReady, e2eKube, eventually, get, remove } from "./support/kube.ts";
import {
  DEMO_NS,
  ensurePlatform,
  ingressBase,
  ingressDispatcher,
  keyOf,
  RELEASE,
  SYSTEM_NS,
} from "./support/platform.ts";
import { chartArgs, PULL_SECRET, pullSecret } from "./support/release.ts";

const CR = "capstan.dev/v1alpha1";
const TWO = { release: "capstan-two", ns: "capstan-two-system", tenant: "capstan-two-demo", host: "capstan-two.test" };
const FACT = "The second release's ferry timetable changes on every leap day.";

let kube: TestKube;
let home: string;
let kc: string[];
let dispatcher: Agent;

/** A request through the ingress's plain HTTP port, by host name. */
async function viaIngress(host: string, path: string, key: string, body: unknown) {
  const res = await request(`${inject("e2eIngressHttp")}${path}`, {
    method: "POST",
    headers: { host, authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    headersTimeout: 60_000,
    bodyTimeout: 60_000,
  });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

const chat = (host: string, key: string) =>
  viaIngress(host, "/api/v1/chat/completions", key, {
    model: "support-assistant",
    messages: [{ role: "user", content: "When does the ferry timetable change?" }],
  });
const search = (host: string, key: string, knowledgeId: string) =>
  viaIngress(host, "/v1/rag/search", key, {
    text: "When does the ferry timetable change?",
    knowledgeIds: [knowledgeId],
    minSimilarity: 0.3,
  });

/**
 * The second release's values: the same released chart and images (chartArgs), small requests (the
 * node has 2 CPUs), no console, no platform Scraper.
 */
function secondValues(): string[] {
  const set: string[] = ["redis.deploy.enabled=true", `imagePullSecrets[0].name=${PULL_SECRET}`];
  set.push(
    "installCRDs=false",
    `operator.watchNamespaces[0]=${TWO.tenant}`,
    "operator.replicas=1",
    "gateway.replicas=1",
    "search.resources.requests.cpu=50m",
    "console.enabled=false",
    "scraping.enabled=false",
    "ingress.enabled=true",
    "ingress.className=traefik",
    `ingress.hosts[0]=${TWO.host}`,
    `networkPolicy.ingressController.ipBlocks[0]=${net.hostIp}/32`,
    // Only the tenant's writers are checked by this release's reference policy; the platform
    // release's policy checks every namespace already.
    `admission.namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=${TWO.tenant}`,
  );
  return set.flatMap((s) => ["--set", s]);
}

async function tenantResources(): Promise<void> {
  await apply(kube, { apiVersion: "v1", kind: "Namespace", metadata: { name: TWO.tenant } });
  const meta = (name: string) => ({ name, namespace: TWO.tenant });
  await apply(kube, {
    apiVersion: CR,
    kind: "KnowledgeBase",
    metadata: meta("ferries"),
    spec: {
      knowledgeId: "kb_two_ferries",
      embedding: { provider: "local", model: "all-MiniLM-L6-v2" },
      sources: [{ name: "Ferries", text: FACT }],
    },
  });
  await apply(kube, {
    apiVersion: CR,
    kind: "Agent",
    metadata: meta("support-assistant"),
    spec: { knowledge: { knowledgeIds: ["kb_two_ferries"], maxResults: 2, minSimilarity: 0.3 } },
  });
  await apply(kube, {
    apiVersion: CR,
    kind: "AccessChannel",
    metadata: meta("two-chat"),
    spec: { channelName: "second release", agentRef: { name: "support-assistant" }, qpm: 100 },
  });
  await apply(kube, {
    apiVersion: CR,
    kind: "SearchKey",
    metadata: meta("two-search"),
    spec: {
      keyName: "second release",
      knowledgeIds: ["kb_two_ferries"],
      permissions: ["read"],
      allowedCIDRs: ["127.0.0.1"],
    },
  });
}

beforeAll(async () => {
  kube = e2eKube();
  home = mkdtempSync(join(tmpdir(), "capstan-e2e-releases-"));
  kc = ["--kubeconfig", inject("e2eKubeconfig")];
  // The watched namespace exists before the release's Roles go in (examples/ creates it later too).
  await apply(kube, { apiVersion: "v1", kind: "Namespace", metadata: { name: DEMO_NS } });
  const installed = await ensurePlatform(kube, home, [`operator.watchNamespaces[0]=${DEMO_NS}`]);
  dispatcher = ingressDispatcher(installed.tls.ca);
}, 900_000);

afterAll(async () => {
  if (kc) await helm(["uninstall", TWO.release, "-n", TWO.ns, "--wait", ...kc], home, 180_000).catch(() => {});
  if (kube) {
    // The hook-made platform objects are off in this release; the tenant namespace goes with its resources.
    await remove(kube, "Namespace", "v1", TWO.tenant).catch(() => {});
    await remove(kube, "Namespace", "v1", TWO.ns).catch(() => {});
  }
  if (home) rmSync(home, { recursive: true, force: true });
}, 300_000);

describe("helm test", () => {
  it("passes on the platform release: gateway and search ready and answering through the Services", async () => {
    const res = await helm(["test", RELEASE, "-n", SYSTEM_NS, "--logs", "--timeout", "180s", ...kc], home, 240_000);
    expect(res.code, `${res.stderr}\n${res.stdout}`).toBe(0);
    expect(res.stdout).toMatch(/Phase:\s+Succeeded/);
    expect(res.stdout).toContain("ok   chat without a key: 401");
  });
});

describe("a second release side by side", () => {
  it("installs beside the first, passes helm test, serves chat and search through the ingress, and leaves the first's resources alone", async () => {
    const started = Date.now();
    // The watched namespace exists before the release's Roles go in; the release's own namespace
    // holds the registry's pull Secret before its pods pull (the gateway, search and helm test's Pod).
    await apply(kube, { apiVersion: "v1", kind: "Namespace", metadata: { name: TWO.tenant } });
    await apply(kube, { apiVersion: "v1", kind: "Namespace", metadata: { name: TWO.ns } });
    await apply(kube, pullSecret(TWO.ns) as never);
    const install = await helm(
      [
        "upgrade",
        "--install",
        TWO.release,
        ...chartArgs(),
        "-n",
        TWO.ns,
        "--create-namespace",
        "--wait",
        "--timeout",
        "300s",
      ]
        .concat(kc)
        .concat(secondValues()),
      home,
      360_000,
    );
    expect(install.code, `${install.stderr}\n${install.stdout}`).toBe(0);
    expect(install.stdout).toContain(`Chat:   http://${TWO.host}/api/v1/chat/completions`);
    expect(install.stdout).toContain(`helm test ${TWO.release} -n ${TWO.ns}`);
    await tenantResources();
    await deploymentReady(kube, TWO.ns, "capstan-gateway");
    await deploymentReady(kube, TWO.ns, "capstan-search");
    await eventually("KnowledgeBase ferries searchable", async () => {
      const kb = await get(kube, "KnowledgeBase", CR, "ferries", TWO.tenant);
      return (kb?.status?.chunks as number) > 0 && condition(kb, "Ready")?.status === "True" ? kb : undefined;
    });
    console.log(`[e2e] second release installed and serving: ${Date.now() - started} ms`);

    const test = await helm(["test", TWO.release, "-n", TWO.ns, "--logs", "--timeout", "180s", ...kc], home, 240_000);
    expect(test.code, `${test.stderr}\n${test.stdout}`).toBe(0);

    const chatKey = await eventually("two-chat key", () => keyOf(kube, "AccessChannel", "two-chat", TWO.tenant));
    const searchKey = await eventually("two-search key", () => keyOf(kube, "SearchKey", "two-search", TWO.tenant));
    const answer = await eventually("a chat answer from the second release", async () => {
      const r = await chat(TWO.host, chatKey);
      return r.status === 200 ? r : undefined;
    });
    expect(JSON.stringify(answer.body)).toContain("leap day");
    const hits = await search(TWO.host, searchKey, "kb_two_ferries");
    expect(hits.status, JSON.stringify(hits.body)).toBe(200);
    expect(JSON.stringify(hits.body)).toContain("ferry timetable");

    // Each release serves its own keys only: the first release's gateway and search do not know
    // the second's keys, and the second's do not know the first's.
    const first = (path: string, key: string, body: unknown) =>
      fetch(`${ingressBase()}${path}`, {
        method: "POST",
        dispatcher,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then((r) => r.status);
    expect(
      await first("/api/v1/chat/completions", chatKey, { model: "m", messages: [{ role: "user", content: "hi" }] }),
    ).toBe(401);
    expect(await first("/v1/rag/search", searchKey, { text: "ferry", knowledgeIds: ["kb_two_ferries"] })).toBe(401);
    const firstKey = await keyOf(kube, "AccessChannel", "website-chat");
    expect((await chat(TWO.host, firstKey)).status).toBe(401);
    // The first release's operator never reconciled the second's tenant: its resources' status
    // comes from the second release's operator alone, whose Lease is in the second's namespace.
    const lease = await get(kube, "Lease", "coordination.k8s.io/v1", `${TWO.release}-operator`, TWO.ns);
    expect(lease?.spec?.holderIdentity).toBeTruthy();
    const website = await get(kube, "AccessChannel", CR, "website-chat", DEMO_NS);
    expect(condition(website, "Ready")?.status).toBe("True");
  });
});
