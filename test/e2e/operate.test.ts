// Day-two operations on a real node: a gateway pod deleted under a bounded load, a QPM edited in
// place, a channel deleted, `helm upgrade` with changed values rolling the data plane, and
// `helm uninstall` leaving only what docs/install.md says stays.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Agent, fetch } from "undici";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { helm } from "../ground/helm.ts";
import type { TestKube } from "../ground/kube-client.ts";
import { deploymentReady, e2eKube, eventually, get, list, mergePatch, remove } from "./support/kube.ts";
import {
  DEMO_NS,
  ensurePlatform,
  helmInstall,
  ingressBase,
  ingressDispatcher,
  installValues,
  keyOf,
  RELEASE,
  SYSTEM_NS,
} from "./support/platform.ts";
import { PULL_SECRET } from "./support/release.ts";
import { serviceRouted } from "./support/service-routing.ts";
import { channel } from "./support/workloads.ts";

const CR = "capstan.dev/v1alpha1";
const GATEWAY_PODS = "app.kubernetes.io/name=capstan-gateway";
let kube: TestKube;
let home: string;
let dispatcher: Agent;

/** One chat completion through the ingress; the HTTP status (0 when the connection failed). */
async function chat(key: string): Promise<number> {
  try {
    const res = await fetch(`${ingressBase()}/api/v1/chat/completions`, {
      method: "POST",
      dispatcher,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "rate limits?" }] }),
      signal: AbortSignal.timeout(30_000),
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/**
 * The pods a ReplicaSet counts as its own: owned by one, neither terminating nor finished (an
 * evicted pod stays behind as Failed).
 */
async function livePodsNamed(selector: string): Promise<{ name: string; uid: string }[]> {
  const pods = await list(kube, "Pod", "v1", SYSTEM_NS, selector);
  const owned = (p: (typeof pods)[number]) =>
    ((p.metadata.ownerReferences ?? []) as { kind: string }[]).some((o) => o.kind === "ReplicaSet");
  return pods
    .filter((p) => owned(p) && !p.metadata.deletionTimestamp)
    .filter((p) => !["Failed", "Succeeded"].includes(p.status?.phase as string))
    .map((p) => ({ name: p.metadata.name as string, uid: p.metadata.uid as string }));
}

/** The uids of those pods. */
async function livePods(selector: string): Promise<string[]> {
  return (await livePodsNamed(selector)).map((p) => p.uid);
}

beforeAll(async () => {
  kube = e2eKube();
  home = mkdtempSync(join(tmpdir(), "capstan-e2e-"));
  const installed = await ensurePlatform(kube, home);
  dispatcher = ingressDispatcher(installed.tls.ca);
}, 900_000);

afterAll(() => {
  if (home) rmSync(home, { recursive: true, force: true });
});

describe("operating the platform", () => {
  it("keeps serving while a gateway pod is deleted under load; the new pod serves", async () => {
    await channel(kube, "e2e-load", 100_000);
    const key = await keyOf(kube, "AccessChannel", "e2e-load");
    // Start from a settled Deployment: an install or upgrade just before can leave an old
    // ReplicaSet's pod terminating, and deleting that one (or an evicted, Failed pod) would rightly
    // bring no replacement.
    const before = await eventually("the gateway's pods settled", async () => {
      const d = await deploymentReady(kube, SYSTEM_NS, "capstan-gateway");
      const pods = await livePodsNamed(GATEWAY_PODS);
      return pods.length === d.spec?.replicas ? pods : undefined;
    });
    const victim = before[0]?.name as string;
    const statuses: number[] = [];
    // A bounded load: 240 requests, four at a time; one gateway pod is deleted a quarter in.
    for (let i = 0; i < 60; i++) {
      if (i === 15) await remove(kube, "Pod", "v1", victim, SYSTEM_NS);
      statuses.push(...(await Promise.all([chat(key), chat(key), chat(key), chat(key)])));
    }
    const failed = statuses.filter((s) => s !== 200).length;
    // A short burst at most (connections cut while the endpoint list catches up), never an outage.
    expect(failed, `statuses: ${JSON.stringify(statuses)}`).toBeLessThanOrEqual(12);
    // The ReplicaSet's replacement may not exist yet when the load ends (the load can be over in
    // under 3 s), and until it does the Deployment still reports itself ready: wait for the pod.
    const after = await eventually("a replacement gateway pod", async () => {
      const uids = await livePods(GATEWAY_PODS);
      return uids.some((uid) => !before.some((p) => p.uid === uid)) ? uids : undefined;
    });
    await deploymentReady(kube, SYSTEM_NS, "capstan-gateway");
    expect(after.filter((uid) => !before.some((p) => p.uid === uid)).length).toBeGreaterThanOrEqual(1);
    expect(await chat(key)).toBe(200);
  });

  it("applies an edited QPM without restarting the gateway", async () => {
    await channel(kube, "e2e-edit", 2);
    const key = await keyOf(kube, "AccessChannel", "e2e-edit");
    const pods = await livePods(GATEWAY_PODS);
    expect([await chat(key), await chat(key), await chat(key)]).toEqual([200, 200, 429]);
    await mergePatch(
      kube,
      { apiVersion: CR, kind: "AccessChannel", metadata: { name: "e2e-edit", namespace: DEMO_NS } },
      {
        spec: { qpm: 5 },
      },
    );
    // Inside the same minute: two were used, so the new limit admits three more, then refuses.
    await eventually(
      "the new QPM admits a request",
      async () => ((await chat(key)) === 200 ? true : undefined),
      60_000,
    );
    expect([await chat(key), await chat(key), await chat(key)]).toEqual([200, 200, 429]);
    expect(await livePods(GATEWAY_PODS)).toEqual(pods);
  });

  it("stops accepting a channel's key once the channel is deleted", async () => {
    await channel(kube, "e2e-delete", 100);
    const key = await keyOf(kube, "AccessChannel", "e2e-delete");
    expect(await chat(key)).toBe(200);
    await remove(kube, "AccessChannel", CR, "e2e-delete", DEMO_NS);
    await eventually(
      "the deleted channel's key is refused",
      async () => ((await chat(key)) === 401 ? true : undefined),
      60_000,
    );
  });

  it("rolls the data plane on `helm upgrade` with changed values", async () => {
    const gatewayBefore = await livePods(GATEWAY_PODS);
    const searchBefore = await livePods("app.kubernetes.io/name=capstan-search");
    await helmInstall(
      home,
      installValues([
        "gateway.extraEnv[0].name=CAPSTAN_E2E_MARK",
        "gateway.extraEnv[0].value=upgraded",
        "search.resources.limits.memory=1600Mi",
      ]),
    );
    await eventually("the gateway pods are replaced", async () => {
      const now = await livePods(GATEWAY_PODS);
      return now.length === 2 && now.every((uid) => !gatewayBefore.includes(uid)) ? now : undefined;
    });
    await deploymentReady(kube, SYSTEM_NS, "capstan-gateway");
    await deploymentReady(kube, SYSTEM_NS, "capstan-search");
    const searchAfter = await livePods("app.kubernetes.io/name=capstan-search");
    expect(searchAfter.some((uid) => !searchBefore.includes(uid))).toBe(true);
    const gw = await get(kube, "Deployment", "apps/v1", "capstan-gateway", SYSTEM_NS);
    expect(JSON.stringify(gw?.spec?.template)).toContain("CAPSTAN_E2E_MARK");
    // The gateway reaches search through its Service: wait until the node routes it to the new pod.
    await serviceRouted(kube, SYSTEM_NS, "capstan-search");
    // Known gap, seen on this node: the first answer after search is replaced can wait out the
    // gateway's retrieval timeout on a kept-alive connection to the gone pod (a black hole, no
    // reset), so the platform is asked until it answers rather than exactly once.
    const key = await keyOf(kube, "AccessChannel", "website-chat");
    await eventually(
      "a chat answer after the upgrade",
      async () => ((await chat(key)) === 200 ? true : undefined),
      120_000,
    );
  });

  it("leaves only the CRDs and users' own resources after `helm uninstall`", async () => {
    // The chart's platform Scraper is made by a hook, which helm does not remove: docs/install.md
    // says to delete it first, while the operator still runs to take its Deployment away.
    await remove(kube, "Scraper", CR, "capstan-scraper", SYSTEM_NS);
    const res = await helm(
      ["uninstall", RELEASE, "-n", SYSTEM_NS, "--kubeconfig", inject("e2eKubeconfig"), "--wait"],
      home,
      180_000,
    );
    expect(res.code, res.stderr).toBe(0);
    const leftovers = await eventually(
      "every Capstan workload gone",
      async () => {
        const left: string[] = [];
        for (const [kind, apiVersion] of [
          ["Deployment", "apps/v1"],
          ["Service", "v1"],
          ["ConfigMap", "v1"],
          ["Secret", "v1"],
        ] as const) {
          for (const o of await list(kube, kind, apiVersion, SYSTEM_NS)) {
            // The platform team's own Secrets (ingress certificate, registry pull credentials) stay.
            if (["kube-root-ca.crt", "capstan-ingress-tls", PULL_SECRET].includes(o.metadata.name)) continue;
            left.push(`${kind}/${o.metadata.name}`);
          }
        }
        return left.length === 0 ? left : undefined;
      },
      120_000,
    );
    expect(leftovers).toEqual([]);
    const crd = await kube.json<{ items: { metadata: { name: string } }[] }>(
      "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    );
    expect(crd.items.map((c) => c.metadata.name).filter((n) => n.endsWith(".capstan.dev"))).toHaveLength(5);
    // The users' resources stay (a platform team's YAML is theirs); their key Secrets stay with them.
    expect(await get(kube, "AccessChannel", CR, "website-chat", DEMO_NS)).toBeDefined();
  });
});
