// KnowledgeBase ingestion through the search service on a real Qdrant that fails, driven by the
// operator on the real API server: ingestion while Qdrant is down shows a condition with the
// reason and recovers by itself (retried with backoff, nothing lost); a collection deleted
// behind the operator's back is re-created and re-filled by the next reconcile (resync 2 s).
import { buildApp as buildSearch, loadLocalEmbedder, loadSearchConfig } from "@capstan/search";
import type { SearchClient } from "@capstan/shared/clients/search-client";
import { ResourceView } from "@capstan/shared/resource-view";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { listCollections, type QdrantServer, startQdrant } from "../ground/qdrant.ts";
import {
  CAP,
  condition,
  create,
  eventually,
  get,
  type Obj,
  serveSearchToOperator,
  startOperatorFor,
} from "../operator/helpers.ts";

const ns = `qdrant-kb-${process.pid}-${Date.now().toString(36)}`;
/** A knowledge base of this namespace, as the documents API addresses it. */
const ref = (knowledgeId: string) => ({ namespace: ns, knowledgeId });
const TOKEN = "operator-qdrant-test-token-0123456789";
let client: TestKube;
let operator: Operator;
let qdrant: QdrantServer;
let search: Awaited<ReturnType<typeof buildSearch>>;
let searchClient: SearchClient;

const sources = [
  { name: "Opening hours", text: "The support desk is open from 8:00 to 18:00 on weekdays." },
  { name: "Warranty", text: "Every pump carries a two-year warranty covering parts and labour." },
  { name: "Returns", text: "Unused items can be returned within thirty days for a full refund." },
];

const kbObj = (name: string): Obj => ({
  apiVersion: CAP,
  kind: "KnowledgeBase",
  metadata: { name, namespace: ns },
  spec: { chunking: { size: 200, overlap: 20 }, sources },
});

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, ns);
  qdrant = await startQdrant(); // private: this test kills it
  const embedder = await loadLocalEmbedder(loadSearchConfig({}));
  search = await buildSearch(
    { internalToken: TOKEN, logLevel: "silent", qdrant: { url: qdrant.url, timeoutMs: 2000 } },
    { view: new ResourceView(), embedders: [embedder] },
  );
  const served = await serveSearchToOperator(client, ns, search, TOKEN, 30_000);
  searchClient = served.searchClient;
  operator = startOperatorFor(inject("kubeconfig"), ns, {
    search: { internalUrl: served.internalUrl },
    resyncSeconds: 2,
  });
  await operator.start();
});

afterAll(async () => {
  await operator?.stop();
  await search?.close();
  await qdrant?.stop(); // its storage folder (every collection in it) goes too
});

const kbNamed = (name: string) => get(client, CAP, "KnowledgeBase", ns, name);

describe("KnowledgeBase ingestion on a failing Qdrant", () => {
  it("Qdrant down: a condition with the reason, then recovery by itself with every source ingested", async () => {
    await qdrant.kill();
    await create(client, kbObj("outage"));
    const down = await eventually("a condition naming the outage", async () => {
      const o = await kbNamed("outage");
      const c = condition(o, "CollectionReady") ?? condition(o, "Ingested");
      return c?.status === "False" ? o : undefined;
    });
    const reasons = ["CollectionReady", "Ingested"].map((t) => condition(down, t)?.reason);
    expect(reasons).toContain("SearchUnavailable");
    expect(condition(down, "Ready")?.status).toBe("False");
    expect(JSON.stringify(down.status)).toMatch(/vector store unavailable/);

    await qdrant.restart();
    const up = await eventually(
      "ready after Qdrant is back",
      async () => {
        const o = await kbNamed("outage");
        return condition(o, "Ready")?.status === "True" && o?.status?.failures === 0 ? o : undefined;
      },
      90_000,
    );
    expect(up.status).toMatchObject({ documents: 3, chunks: 3, failures: 0, servingModel: "local:all-MiniLM-L6-v2" });
    // The collection's settings, derived from the model, in status: shared per model, one tenant.
    // The tenant is the namespace and the id: the same id in another namespace is another tenant.
    expect(up.status?.collection).toBe(`capstan_chunks_local_all_minilm_l6_v2_384/${ns}.kb_outage`);
    expect(up.status?.vectors).toEqual({
      backend: "qdrant",
      size: 384,
      distance: "Cosine",
      hnsw: { m: 0, payloadM: 16, efConstruct: 128, efSearch: 128 },
    });
    expect(await searchClient.getKnowledgeBase(ref("kb_outage"))).toEqual({
      knowledgeId: "kb_outage",
      model: "local:all-MiniLM-L6-v2",
      dimensions: 384,
      documents: 3,
      chunks: 3,
      // The same vector set the status names, from the same kind of read.
      collection: up.status?.collection,
      vectors: up.status?.vectors,
    });
  });

  it("a collection deleted behind the operator's back is re-created and re-filled by the next reconcile", async () => {
    const data = (await listCollections(qdrant.url)).filter((c) => !c.endsWith("_registry"));
    expect(data).toHaveLength(1);
    const res = await fetch(`${qdrant.url}/collections/${data[0]}`, { method: "DELETE" });
    expect(res.status).toBe(200);
    let seen: { search?: { chunks: number }; status?: unknown } = {};
    await eventually(
      "re-filled",
      async () => {
        seen = {
          search: await searchClient.getKnowledgeBase(ref("kb_outage")),
          status: (await kbNamed("outage"))?.status,
        };
        return seen.search?.chunks === 3;
      },
      90_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last seen ${JSON.stringify(seen)}`);
    });
    expect(await listCollections(qdrant.url)).toEqual(expect.arrayContaining(data));
  });
});
