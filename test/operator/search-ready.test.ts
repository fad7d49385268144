// A KnowledgeBase created before the search service answers (the first install: search still
// loading its model while the operator reconciles) is ingested as soon as search's Deployment
// reports a ready replica, not when its per-key backoff, grown while search was down, comes round.
// A Ready KnowledgeBase whose search came back on an empty store (an embedded store after a
// restart, a store switched by the chart) is refilled at once, not at its next counts sync.
import { buildApp as buildSearch, loadLocalEmbedder, loadSearchConfig } from "@capstan/search";
import { listenInternal } from "@capstan/shared";
import { ResourceView } from "@capstan/shared/resource-view";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Controller } from "../../operator/src/controller/controller.ts";
import type { Operator } from "../../operator/src/manager.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { freePort } from "../ground/ports.ts";
import { CAP, condition, create, eventually, get, internalTokenSecret, pathOf, startOperatorFor } from "./helpers.ts";

const ns = `search-ready-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = "operator-search-ready-test-token-0123456789";
let client: TestKube;
let operator: Operator;
let search: Awaited<ReturnType<typeof buildSearch>>;
let internalPort: number;

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, ns);
  await internalTokenSecret(client, ns, TOKEN);
  const embedder = await loadLocalEmbedder(loadSearchConfig({}));
  search = await buildSearch(
    { internalToken: TOKEN, logLevel: "warn" },
    { view: new ResourceView(), embedders: [embedder] },
  );
  // Nothing listens on search's internal port yet.
  internalPort = await freePort();
  operator = startOperatorFor(inject("kubeconfig"), ns, {
    search: { internalUrl: `http://127.0.0.1:${internalPort}` },
  });
  await operator.start();
}, 120_000);

afterAll(async () => {
  await operator?.stop();
  await search?.close();
});

describe("a KnowledgeBase waiting for search", () => {
  it("is ingested as soon as search's Deployment is ready, its backoff notwithstanding", async () => {
    await create(client, {
      apiVersion: CAP,
      kind: "KnowledgeBase",
      metadata: { name: "early", namespace: ns },
      spec: { sources: [{ name: "Trains", text: "The night train to Vienna leaves at ten past eleven." }] },
    });
    const kb = () => get(client, CAP, "KnowledgeBase", ns, "early");
    await eventually("the KnowledgeBase reports search unavailable", async () =>
      condition(await kb(), "Ready")?.reason === "SearchUnavailable" ? true : undefined,
    );
    // Failed attempts until the per-key backoff (5 ms doubling) waits 10 s before the next one.
    const queue = (operator.controllers.knowledgeBase as Controller).queue;
    await eventually("12 failed attempts", () => queue.numRequeues(`${ns}/early`) >= 12, 120_000);
    await search.listen({ port: 0, host: "127.0.0.1" });
    await listenInternal(search, { port: internalPort, host: "127.0.0.1" });
    // What the Deployment controller would write once search's pod is Ready.
    const deployment = await eventually("the operator's capstan-search Deployment", () =>
      get(client, "apps/v1", "Deployment", ns, "capstan-search"),
    );
    expect(deployment.metadata.name).toBe("capstan-search");
    const readyAt = Date.now();
    await client.json(`${pathOf("apps/v1", "Deployment", ns, "capstan-search")}/status`, {
      method: "PATCH",
      body: { status: rolledOutStatus(deployment.metadata.generation ?? 1, 1) },
      contentType: "application/merge-patch+json",
    });
    await eventually(
      "the KnowledgeBase Ready within 3 s of search's Deployment being ready (its next try was 10 s away)",
      async () => {
        const k = await kb();
        return condition(k, "Ready")?.status === "True" && (k?.status?.chunks as number) > 0 ? k : undefined;
      },
      3_000,
    );
    console.log(`[search-ready] KnowledgeBase Ready ${Date.now() - readyAt} ms after search's Deployment`);
  }, 180_000);

  it("is refilled as soon as search comes back on an empty store, before its counts sync is due", async () => {
    // A KnowledgeBase of its own: "early" above still has delayed retries queued from its backoff.
    await create(client, {
      apiVersion: CAP,
      kind: "KnowledgeBase",
      metadata: { name: "steady", namespace: ns },
      spec: { sources: [{ name: "Ferries", text: "The ferry to the island leaves every hour on the hour." }] },
    });
    const internal = `http://127.0.0.1:${internalPort}/internal/v1/namespaces/${ns}/knowledge-bases/kb_steady`;
    const chunks = async () => {
      const res = await fetch(internal, { headers: { authorization: `Bearer ${TOKEN}` } });
      return res.status === 200 ? ((await res.json()) as { data: { chunks: number } }).data.chunks : 0;
    };
    await eventually("KnowledgeBase steady Ready", async () => {
      const k = await get(client, CAP, "KnowledgeBase", ns, "steady");
      return condition(k, "Ready")?.status === "True" && (k?.status?.chunks as number) > 0 ? k : undefined;
    });
    expect(await chunks()).toBeGreaterThan(0);
    // The reconciles of its last status writes over: its next one is the counts sync, 60 s away
    // (knowledgeBaseCountsSeconds), unless search's return wakes it.
    await new Promise((r) => setTimeout(r, 3_000));
    // Search restarts on an empty embedded store (its pod replaced); no replica ready meanwhile.
    const deployment = pathOf("apps/v1", "Deployment", ns, "capstan-search");
    const generation = (await get(client, "apps/v1", "Deployment", ns, "capstan-search"))?.metadata.generation;
    const status = (readyReplicas: number) =>
      client.json(`${deployment}/status`, {
        method: "PATCH",
        body: { status: rolledOutStatus(generation ?? 1, readyReplicas) },
        contentType: "application/merge-patch+json",
      });
    await status(0);
    await search.close();
    const embedder = await loadLocalEmbedder(loadSearchConfig({}));
    search = await buildSearch(
      { internalToken: TOKEN, logLevel: "warn" },
      { view: new ResourceView(), embedders: [embedder] },
    );
    await listenInternal(search, { port: internalPort, host: "127.0.0.1" });
    expect(await chunks()).toBe(0);
    const readyAt = Date.now();
    await status(1);
    // The operator's counts sync comes every 60 s (knowledgeBaseCountsSeconds); the wakeup is at once.
    await eventually("the KnowledgeBase's chunks back in search within 10 s", async () => (await chunks()) > 0, 10_000);
    console.log(`[search-ready] refilled ${Date.now() - readyAt} ms after search's Deployment was ready again`);
  }, 180_000);
});

/** What the Deployment controller writes for a one-replica rollout of `generation` with `ready` pods ready. */
function rolledOutStatus(generation: number, ready: number) {
  return {
    observedGeneration: generation,
    replicas: 1,
    updatedReplicas: 1,
    readyReplicas: ready,
    availableReplicas: ready,
  };
}
