// Search fed by a real kube-apiserver: SearchKeys and KnowledgeBases watched read-only through
// KubeSource (what main.ts does in a cluster), keys matched by status.keyHash, rotation and
// revocation picked up from the watch.
import { hashKey, listenInternal } from "@capstan/shared";
import { KubeSource, ResourceView } from "@capstan/shared/resource-view";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../services/search/src/index.ts";
import { ensureNamespace, harnessKubeClient, installCrds } from "../ground/kube-client.ts";
import { HANDBOOK } from "./corpus.ts";
import { call, INTERNAL_TOKEN, ingest, localEmbedder } from "./helpers.ts";

const NS = `search-${process.pid}-${Date.now().toString(36)}`;
const API = `/apis/capstan.dev/v1alpha1/namespaces/${NS}`;
const client = harnessKubeClient();
let app: FastifyInstance;
let source: KubeSource;
let url: string;
/** The internal port: documents API and health. */
let internalUrl: string;

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function setKeyStatus(name: string, status: Record<string, unknown>): Promise<void> {
  await client.json(`${API}/searchkeys/${name}/status`, {
    method: "PATCH",
    contentType: "application/merge-patch+json",
    body: { status },
  });
}

const body = { knowledgeIds: ["kb_handbook"], text: "How many days off do I get each year?", minSimilarity: 0.6 };
const status = async (token: string) => (await call(url, "/v1/rag/search", { token, body })).status;

beforeAll(async () => {
  await installCrds(client);
  await ensureNamespace(client, NS);
  await client.json(`${API}/knowledgebases`, {
    method: "POST",
    body: { apiVersion: "capstan.dev/v1alpha1", kind: "KnowledgeBase", metadata: { name: "handbook" }, spec: {} },
  });
  await client.json(`${API}/searchkeys`, {
    method: "POST",
    body: {
      apiVersion: "capstan.dev/v1alpha1",
      kind: "SearchKey",
      metadata: { name: "reader" },
      spec: { keyName: "reader", knowledgeIds: ["kb_handbook"] },
    },
  });
  await setKeyStatus("reader", { keyHash: hashKey("kube-key-one") });

  const view = new ResourceView();
  source = new KubeSource(view, client, { namespace: NS, kinds: ["SearchKey", "KnowledgeBase"] });
  await source.start();
  app = await buildApp(
    { internalToken: INTERNAL_TOKEN, logLevel: "warn" },
    { view, embedders: [await localEmbedder()] },
  );
  await app.listen({ port: 0, host: "127.0.0.1" });
  url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  internalUrl = `http://127.0.0.1:${((await listenInternal(app, { port: 0, host: "127.0.0.1" })).address() as { port: number }).port}`;
  await ingest(internalUrl, "kb_handbook", HANDBOOK.slice(0, 3), NS);
});
afterAll(async () => {
  source?.stop();
  await app?.close();
  await client.json(`/api/v1/namespaces/${NS}`, { method: "DELETE" }).catch(() => {});
});

describe("search with resources from the API server", () => {
  it("is ready once the view has synced, and accepts the key whose hash is in status", async () => {
    expect((await fetch(`${internalUrl}/readyz`)).status).toBe(200);
    const r = await call<{ docsId: string }[]>(url, "/v1/rag/search", { token: "kube-key-one", body });
    expect(r.status).toBe(200);
    expect(r.body.data?.[0]?.docsId).toBe("vacation-policy");
  });

  it("follows a rotation: the new key works, the previous one until its validUntil", async () => {
    await setKeyStatus("reader", {
      keyHash: hashKey("kube-key-two"),
      previousKeys: [{ keyHash: hashKey("kube-key-one"), validUntil: new Date(Date.now() + 3_600_000).toISOString() }],
    });
    await until("the rotated key", async () => (await status("kube-key-two")) === 200);
    expect(await status("kube-key-one")).toBe(200);
    await setKeyStatus("reader", {
      previousKeys: [{ keyHash: hashKey("kube-key-one"), validUntil: new Date(Date.now() - 1000).toISOString() }],
    });
    await until("the previous key to lapse", async () => (await status("kube-key-one")) === 401);
    expect(await status("kube-key-two")).toBe(200);
  });

  it("narrows the scope and revokes the key when the resource changes or goes", async () => {
    await client.json(`${API}/knowledgebases`, {
      method: "POST",
      body: { apiVersion: "capstan.dev/v1alpha1", kind: "KnowledgeBase", metadata: { name: "payroll" }, spec: {} },
    });
    await until("kb_payroll in the view", async () => {
      const r = await call(internalUrl, "/v1/rag/search", {
        token: INTERNAL_TOKEN,
        headers: { "x-capstan-namespace": NS },
        body: { ...body, knowledgeIds: ["kb_payroll"] },
      });
      return r.status === 200;
    });
    const outside = await call(url, "/v1/rag/search", {
      token: "kube-key-two",
      body: { ...body, knowledgeIds: ["kb_payroll"] },
    });
    expect(outside.status).toBe(400);
    await client.json(`${API}/searchkeys/reader`, { method: "DELETE" });
    await until("the deleted key to be refused", async () => (await status("kube-key-two")) === 401);
  });
});
