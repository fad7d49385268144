// Documents uploaded through search's public API survive a change of the KnowledgeBase's
// embedding model, on the real API server, the real operator and the real search service with
// the run's real Qdrant: the operator builds the new model's vector set from the sources, carries
// the uploads made before the build into it (re-embedded by the new model) and switches; an
// upload deleted while the build runs stays deleted, one made while it runs is kept. The new
// model is an OpenAI-compatible provider on loopback backed by the real local model
// (test/search/second-model.ts), which holds the build half-way while the test deletes and uploads.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { dropCollections, qdrantPrefix } from "../ground/qdrant.ts";
import { type SecondModel, startSecondModel } from "../search/second-model.ts";
import {
  CAP,
  condition,
  create,
  eventually,
  get,
  type Obj,
  patch,
  startOperatorFor,
  whenCondition,
} from "./helpers.ts";
import { type ServedSearch, startSearchForNamespaces } from "./served-search.ts";

const ns = `uploads-model-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = "uploads-model-test-token-0123456789";
const WRITER = "uploads-model-writer-key-0123456789";
const SOURCE = "The handbook's only source document says the office opens at nine.";
const qdrantUrl = inject("qdrantUrl");
const prefix = qdrantPrefix("uploads_model");

let client: TestKube;
let operator: Operator;
let search: ServedSearch;
let second: SecondModel;

interface Envelope {
  code: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read the envelopes' data loosely
  data: any;
}

async function call(method: string, path: string, body?: string, type?: string): Promise<Envelope> {
  const res = await fetch(`${search.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${WRITER}`, ...(type ? { "content-type": type } : {}) },
    ...(body !== undefined ? { body } : {}),
  });
  const envelope = (await res.json()) as Envelope;
  expect(res.status, JSON.stringify(envelope)).toBe(200);
  return envelope;
}
const upload = (name: string, type: string, body: string) =>
  call("PUT", `/v1/knowledge-bases/kb_handbook/documents/${name}`, body, type);
const listed = async () =>
  ((await call("GET", "/v1/knowledge-bases/kb_handbook/documents")).data.documents as { name: string }[]).map(
    (d) => d.name,
  );
const topHit = async (text: string): Promise<string[]> => {
  const body = JSON.stringify({ knowledgeIds: ["kb_handbook"], text, maxResults: 3, minSimilarity: 0 });
  const res = await call("POST", "/v1/rag/search", body, "application/json");
  return (res.data as { docsName: string }[]).map((h) => h.docsName);
};
const kb = async () => (await get(client, CAP, "KnowledgeBase", ns, "handbook")) as Obj;
const uploadedIn = (o: Obj) => (o.status?.uploaded as { documents?: number } | undefined)?.documents;
const buildingIn = (o: Obj) => (o.status?.building as { model?: string } | undefined)?.model;

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, ns);
  second = await startSecondModel("handbook-embed-512");
  const qdrant = { qdrant: { url: qdrantUrl, collectionPrefix: prefix } };
  search = await startSearchForNamespaces(client, [ns], TOKEN, qdrant, ns, [second.embedder]);
  operator = startOperatorFor(inject("kubeconfig"), ns, {
    search: { internalUrl: search.internalUrl },
    knowledgeBaseCountsSeconds: 1,
  });
  await operator.start();
  await create(client, {
    apiVersion: CAP,
    kind: "KnowledgeBase",
    metadata: { name: "handbook", namespace: ns },
    spec: { sources: [{ name: "Opening hours", text: SOURCE }] },
  });
  await create(client, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "writer-supplied", namespace: ns },
    data: { key: Buffer.from(WRITER).toString("base64") },
  });
  await create(client, {
    apiVersion: CAP,
    kind: "SearchKey",
    metadata: { name: "writer", namespace: ns },
    spec: {
      keyName: "writer",
      knowledgeIds: ["kb_handbook"],
      keySecretRef: { name: "writer-supplied", key: "key" },
      permissions: ["read", "write"],
    },
  });
  await whenCondition(client, "KnowledgeBase", ns, "handbook", "Ready", "True");
  await eventually("the writer's key known to search", async () => {
    const res = await fetch(`${search.url}/v1/knowledge-bases/kb_handbook/documents`, {
      headers: { authorization: `Bearer ${WRITER}` },
    });
    return res.status === 200;
  });
}, 300_000);

afterAll(async () => {
  await operator?.stop();
  await search?.close();
  await second?.embedder.close();
  await second?.close();
  await dropCollections(qdrantUrl, prefix);
});

describe("a KnowledgeBase's model change with uploaded documents", () => {
  it("carries the uploads into the new model's vector set; a delete during the build stays deleted", async () => {
    await upload("vacation.md", "text/markdown", "# Vacation\n\nEveryone gets twenty-eight days of paid vacation.");
    await upload(
      "parking.html",
      "text/html",
      "<html><head><title>Parking</title></head><body><p>Bicycles are parked in the courtyard rack.</p></body></html>",
    );
    await upload("coffee.md", "text/markdown", "# Coffee\n\nThe old coffee machine stands on the third floor.");
    await eventually("status counts the uploads", async () => uploadedIn(await kb()) === 3);

    // The new model's build waits in the embedding of the source until released.
    const hold = second.hold((t) => t.includes("office opens at nine"));
    await patch(
      client,
      { apiVersion: CAP, kind: "KnowledgeBase", ns, name: "handbook" },
      { spec: { embedding: second.spec } },
    );
    await hold.held;
    const building = await eventually("the build in status", async () => {
      const o = await kb();
      return buildingIn(o) === second.name ? o : undefined;
    });
    expect(building.status?.servingModel).toBe("local:all-MiniLM-L6-v2");
    // While it is built: a delete, and a new upload (embedded by the new model at once).
    expect((await call("DELETE", "/v1/knowledge-bases/kb_handbook/documents/coffee.md")).data.deleted).toBe(1);
    await upload("lunch.txt", "text/plain", "The canteen serves vegetarian lasagne on Tuesdays.");
    hold.release();

    const done = await eventually(
      "serving the new model",
      async () => {
        const o = await kb();
        const ok = o.status?.servingModel === second.name && !o.status?.building && uploadedIn(o) === 3;
        // A finished run's status (Ingested True), not the progress of a run still going.
        const finished = condition(o, "Ingested")?.status === "True" && condition(o, "Ready")?.status === "True";
        return ok && finished ? o : undefined;
      },
      90_000,
    );
    expect(done.status).toMatchObject({ documents: 4, chunks: 4, uploaded: { documents: 3, chunks: 3 } });
    expect(done.status?.vectors).toMatchObject({ backend: "qdrant", size: 512 });
    // The carried uploads' texts went through the new model.
    expect(second.inputs.some((t) => t.includes("twenty-eight days"))).toBe(true);
    expect(second.inputs.some((t) => t.includes("courtyard rack"))).toBe(true);
    expect(await listed()).toEqual(["lunch.txt", "parking.html", "vacation.md"]);
    expect((await topHit("How many vacation days do I get?"))[0]).toBe("vacation.md");
    expect((await topHit("Where do I park my bicycle?"))[0]).toBe("parking.html");
    expect((await topHit("What does the canteen serve on Tuesdays?"))[0]).toBe("lunch.txt");
    expect(await topHit("Where is the coffee machine?")).not.toContain("coffee.md");
    expect(second.inputs).toContain("Where is the coffee machine?"); // questions embedded by the new model
  });
});
