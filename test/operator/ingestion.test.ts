// KnowledgeBase ingestion end to end: the operator on the real API server drives the real search
// service (started in-process from @capstan/search with its local embedding model) through the
// internal documents API, with the internal token read from the Secret the data plane shares.

import { readFileSync } from "node:fs";
import { buildApp as buildSearch, loadLocalEmbedder, loadSearchConfig } from "@capstan/search";
import { parseResource } from "@capstan/shared/api";
import type { SearchClient } from "@capstan/shared/clients/search-client";
import { ResourceView } from "@capstan/shared/resource-view";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import {
  CAP,
  condition,
  create,
  eventually,
  get,
  patch,
  remove,
  serveSearchToOperator,
  startOperatorFor,
  whenCondition,
} from "./helpers.ts";

const ns = `ingest-${process.pid}-${Date.now().toString(36)}`;
/** A knowledge base of this namespace, as the documents API addresses it. */
const ref = (knowledgeId: string) => ({ namespace: ns, knowledgeId });
const TOKEN = "operator-ingestion-test-token-0123456789";
let client: TestKube;
let operator: Operator;
let search: Awaited<ReturnType<typeof buildSearch>>;
let searchClient: SearchClient;
const view = new ResourceView();

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, ns);
  const embedder = await loadLocalEmbedder(loadSearchConfig({}));
  search = await buildSearch({ internalToken: TOKEN, logLevel: "warn" }, { view, embedders: [embedder] });
  const served = await serveSearchToOperator(client, ns, search, TOKEN, 60_000);
  searchClient = served.searchClient;
  await create(client, {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "faq", namespace: ns },
    data: {
      billing: "Invoices are sent on the first day of every month. Refunds take five business days.",
      shipping: "Parcels ship from Rotterdam. Delivery inside the EU takes two to four days.",
    },
  });
  operator = startOperatorFor(inject("kubeconfig"), ns, { search: { internalUrl: served.internalUrl } });
  await operator.start();
});

afterAll(async () => {
  await operator?.stop();
  await search?.close();
});

describe("KnowledgeBase ingestion through the search service", () => {
  it("ingests inline and ConfigMap sources, removes dropped ones, and the finalizer deletes the collection", async () => {
    await create(client, {
      apiVersion: CAP,
      kind: "KnowledgeBase",
      metadata: { name: "support", namespace: ns },
      spec: {
        chunking: { size: 200, overlap: 20 },
        sources: [
          { name: "Opening hours", text: "The support desk is open from 8:00 to 18:00 on weekdays." },
          { name: "Warranty", text: "Every pump carries a two-year warranty covering parts and labour." },
          { name: "FAQ", configMap: { name: "faq" } },
        ],
      },
    });
    const kb = await eventually("ingested", async () => {
      const o = await get(client, CAP, "KnowledgeBase", ns, "support");
      return o?.status?.lastRefreshTime ? o : undefined;
    });
    expect(condition(kb, "Ready")).toMatchObject({ status: "True", reason: "Ready" });
    expect(kb.status).toMatchObject({
      knowledgeId: "kb_support",
      documents: 4,
      chunks: 4,
      failures: 0,
      progress: "3/3 sources",
    });
    // The data plane learns knowledge bases from the resources (in a cluster: its read-only watch).
    view.replace("KnowledgeBase", [parseResource(kb)]);
    const hits = await searchClient.search({
      knowledgeIds: ["kb_support"],
      text: "how long does delivery take",
      minSimilarity: 0,
      maxResults: 1,
    });
    expect(hits[0]).toMatchObject({ docsName: "FAQ/shipping" });
    expect(hits[0]?.text).toContain("Rotterdam");

    // A changed spec re-ingests; the source that is gone is deleted from the collection.
    await patch(
      client,
      { apiVersion: CAP, kind: "KnowledgeBase", ns, name: "support" },
      {
        spec: { sources: [{ name: "Warranty", text: "Every pump carries a three-year warranty." }] },
      },
    );
    const changed = await eventually("re-ingested", async () => {
      const o = await get(client, CAP, "KnowledgeBase", ns, "support");
      return o?.status?.observedGeneration === o?.metadata.generation && o?.status?.documents === 1 ? o : undefined;
    });
    expect(changed.status?.progress).toBe("1/1 sources");
    expect(await searchClient.getKnowledgeBase(ref("kb_support"))).toEqual({
      knowledgeId: "kb_support",
      model: "local:all-MiniLM-L6-v2",
      dimensions: 384,
      documents: 1,
      chunks: 1,
      // The embedded store's collection, as the status names it.
      collection: changed.status?.collection,
      vectors: { backend: "embedded", size: 384, distance: "Cosine", hnsw: { m: 16, efConstruct: 128, efSearch: 256 } },
    });
    expect(changed.status?.collection).toBe(`${ns}.kb_support`);
    const after = await searchClient.search({
      knowledgeIds: ["kb_support"],
      text: "warranty",
      minSimilarity: 0,
      maxResults: 5,
    });
    expect(after.map((h) => h.text)).toEqual(["Every pump carries a three-year warranty."]);

    await remove(client, CAP, "KnowledgeBase", ns, "support");
    await eventually("deleted", async () => (await get(client, CAP, "KnowledgeBase", ns, "support")) === undefined);
    expect(await searchClient.getKnowledgeBase(ref("kb_support"))).toBeUndefined();
  });

  it("a missing ConfigMap is a counted failure with its reason", async () => {
    await create(client, {
      apiVersion: CAP,
      kind: "KnowledgeBase",
      metadata: { name: "partial", namespace: ns },
      spec: {
        sources: [
          { name: "ok", text: "fine" },
          { name: "gone", configMap: { name: "nowhere" } },
        ],
      },
    });
    const kb = await whenCondition(client, "KnowledgeBase", ns, "partial", "Ingested", "False", "ConfigMapNotFound");
    expect(kb.status).toMatchObject({ documents: 1, failures: 1 });
    expect(condition(kb, "Ready")?.reason).toBe("PartiallyIngested");
  });

  it("calls search under the outbound targets docs/observability.md names", async () => {
    // The docs once named a target ("search_documents") no process exports: every target the
    // operator exported while ingesting above must be one the docs' operator row lists.
    const docs = readFileSync(new URL("../../docs/observability.md", import.meta.url), "utf8");
    const row = docs.split("\n").find((l) => l.startsWith("| `capstan_operator_outbound_*`")) ?? "";
    const documented = new Set([...row.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]));
    const exported = [
      ...(await operator.registry.metrics()).matchAll(
        /^capstan_operator_outbound_requests_total\{[^}]*target="([^"]+)"/gm,
      ),
    ].map((m) => m[1] as string);
    expect(exported).toEqual(expect.arrayContaining(["search_ensure_kb", "search_upsert_document"]));
    expect([...new Set(exported)].filter((t) => !documented.has(t))).toEqual([]);
  });
});
