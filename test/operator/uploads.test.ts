// Documents uploaded through search's public documents API, on the real API server with an
// operator per namespace and one search service watching both: a key with the write permission
// uploads Markdown, text, HTML and PDF and finds each with /v1/rag/search; a read-only key is
// refused (403); a key of namespace a cannot reach b's knowledge base; oversize bodies are 413, a
// damaged PDF a clear 400; the uploads survive a refresh of the KnowledgeBase's sources, and its
// status counts follow uploads and deletes.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { makePdf } from "../../services/shared/src/documents/pdf.fixture.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { CAP, create, eventually, get, type Obj, patch, startOperatorFor, whenCondition } from "./helpers.ts";
import { type ServedSearch, startSearchForNamespaces } from "./served-search.ts";

const suffix = `${process.pid}-${Date.now().toString(36)}`;
const A = `uploads-a-${suffix}`;
const B = `uploads-b-${suffix}`;
const TOKEN = "uploads-test-internal-token-0123456789";
const WRITER = "uploads-writer-key-0123456789";
const READER = "uploads-reader-key-0123456789";
const B_WRITER = "uploads-b-writer-key-0123456789";
const LIMIT = 256 * 1024;

let client: TestKube;
let operators: Operator[] = [];
let search: ServedSearch;
let url: string;

interface Envelope {
  code: number;
  message: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read the envelopes' data loosely
  data: any;
}

async function call(method: string, path: string, key: string, body?: Buffer | string, type?: string) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(type ? { "content-type": type } : {}) },
    ...(body !== undefined ? { body: typeof body === "string" ? body : new Uint8Array(body) } : {}),
  });
  return { status: res.status, error: res.headers.get("x-capstan-error"), body: (await res.json()) as Envelope };
}
const put = (kb: string, name: string, key: string, body: Buffer | string, type: string) =>
  call("PUT", `/v1/knowledge-bases/${kb}/documents/${encodeURIComponent(name)}`, key, body, type);

async function searchTexts(key: string, kb: string, text: string): Promise<string[]> {
  const res = await fetch(`${url}/v1/rag/search`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ knowledgeIds: [kb], text, maxResults: 3, minSimilarity: 0 }),
  });
  const body = (await res.json()) as Envelope;
  expect(body.code).toBe(200);
  return (body.data as { docsName: string }[]).map((h) => h.docsName);
}

async function searchKey(ns: string, name: string, key: string, knowledgeIds: string[], permissions?: string[]) {
  await create(client, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `${name}-supplied`, namespace: ns },
    data: { key: Buffer.from(key).toString("base64") },
  });
  await create(client, {
    apiVersion: CAP,
    kind: "SearchKey",
    metadata: { name, namespace: ns },
    spec: {
      keyName: name,
      knowledgeIds,
      keySecretRef: { name: `${name}-supplied`, key: "key" },
      ...(permissions ? { permissions } : {}),
    },
  });
}

const kbStatus = async (ns: string, name: string) => (await get(client, CAP, "KnowledgeBase", ns, name)) as Obj;

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, A);
  await ensureNamespace(client, B);
  search = await startSearchForNamespaces(client, [A, B], TOKEN, { documents: { maxBodyBytes: LIMIT } });
  url = search.url;
  const internalUrl = search.internalUrl;
  operators = [A, B].map((ns) =>
    startOperatorFor(inject("kubeconfig"), ns, { search: { internalUrl }, knowledgeBaseCountsSeconds: 1 }),
  );
  await Promise.all(operators.map((o) => o.start()));
  const handbook = "The handbook's only source document says the office opens at nine.";
  await create(client, {
    apiVersion: CAP,
    kind: "KnowledgeBase",
    metadata: { name: "handbook", namespace: A },
    spec: { sources: [{ name: "Opening hours", text: handbook }] },
  });
  await create(client, {
    apiVersion: CAP,
    kind: "KnowledgeBase",
    metadata: { name: "private", namespace: B },
    spec: { sources: [{ name: "Secret plans", text: "Namespace b keeps its plans here." }] },
  });
  // The writer of a lists kb_private too: it is b's, so the scope cannot reach it from a.
  await searchKey(A, "writer", WRITER, ["kb_handbook", "kb_private"], ["read", "write"]);
  await searchKey(A, "reader", READER, ["kb_handbook"]);
  await searchKey(B, "writer", B_WRITER, ["kb_private"], ["read", "write"]);
  await whenCondition(client, "KnowledgeBase", A, "handbook", "Ready", "True");
  await whenCondition(client, "KnowledgeBase", B, "private", "Ready", "True");
  for (const [ns, name] of [
    [A, "writer"],
    [A, "reader"],
    [B, "writer"],
  ] as const) {
    // a's writer is not Ready (kb_private has no KnowledgeBase in a), but its key is issued.
    await eventually(`${name} hashed`, async () => (await get(client, CAP, "SearchKey", ns, name))?.status?.keyHash);
  }
  // The search service's view has a key once a call with it is no longer a 401: each key is an
  // event of its own, so wait for all three (waiting for one let a new writer's first upload meet
  // a 401 under load).
  for (const [key, kb] of [
    [READER, "kb_handbook"],
    [WRITER, "kb_handbook"],
    [B_WRITER, "kb_private"],
  ] as const) {
    await eventually(
      "keys known to search",
      async () => (await call("GET", `/v1/knowledge-bases/${kb}/documents`, key)).status === 200,
    );
  }
}, 300_000);

afterAll(async () => {
  await Promise.all(operators.map((o) => o.stop()));
  await search?.close();
});

describe("uploading documents with a write key", () => {
  it("takes Markdown, text, HTML and PDF, each found by /v1/rag/search", async () => {
    const pdf = await makePdf({
      title: "Parking rules",
      sections: [
        { heading: "Bicycles", paragraphs: ["Bicycles are parked in the courtyard rack behind the kitchen."] },
      ],
    });
    const uploads = [
      ["vacation.md", "text/markdown", "# Vacation\n\nEveryone gets twenty-eight days of paid vacation per year."],
      ["wifi.txt", "text/plain; charset=utf-8", "The guest wifi password is printed on the reception desk card."],
      [
        "lunch.html",
        "text/html",
        "<html><head><title>Lunch</title></head><body><h1>Lunch</h1><p>The canteen serves vegetarian lasagne on Tuesdays.</p></body></html>",
      ],
      ["parking.pdf", "application/pdf", pdf],
    ] as const;
    for (const [name, type, body] of uploads) {
      const res = await put("kb_handbook", name, WRITER, body, type);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data).toMatchObject({ knowledgeId: "kb_handbook", name, chunks: 1 });
    }
    expect((await put("kb_handbook", "lunch.html", WRITER, uploads[2][2], "text/html")).body.data.title).toBe("Lunch");
    expect(await searchTexts(WRITER, "kb_handbook", "How many vacation days do I get?")).toContain("vacation.md");
    expect((await searchTexts(WRITER, "kb_handbook", "guest wifi password"))[0]).toBe("wifi.txt");
    expect((await searchTexts(WRITER, "kb_handbook", "vegetarian lasagne in the canteen"))[0]).toBe("lunch.html");
    expect((await searchTexts(WRITER, "kb_handbook", "Where do I park my bicycle?"))[0]).toBe("parking.pdf");
    // A read-only key searches them too, and lists them.
    expect((await searchTexts(READER, "kb_handbook", "Where do I park my bicycle?"))[0]).toBe("parking.pdf");
    const list = await call("GET", "/v1/knowledge-bases/kb_handbook/documents", READER);
    expect(list.status).toBe(200);
    expect(list.body.data.documents.map((d: { name: string }) => d.name)).toEqual([
      "lunch.html",
      "parking.pdf",
      "vacation.md",
      "wifi.txt",
    ]);
    expect(list.body.data.documents[1]).toMatchObject({ format: "pdf", chunks: 1 });
    expect(list.body.data).toMatchObject({ uploaded: { documents: 4, chunks: 4 }, total: { documents: 5, chunks: 5 } });
  });

  it("refuses a read-only key with 403 before reading the body", async () => {
    const res = await put("kb_handbook", "x.md", READER, "# x", "text/markdown");
    expect(res.status).toBe(403);
    expect(res.error).toBe("SEARCH_ERR_WRITE_FORBIDDEN");
    expect(res.body).toEqual({ code: 403, message: expect.stringContaining("write permission"), data: null });
    expect((await call("DELETE", "/v1/knowledge-bases/kb_handbook/documents/wifi.txt", READER)).status).toBe(403);
    expect((await put("kb_handbook", "x.md", "not-a-key-at-all", "# x", "text/markdown")).status).toBe(401);
  });

  it("keeps namespaces apart: a's write key cannot reach b's knowledge base", async () => {
    const res = await put(
      "kb_private",
      "planted.md",
      WRITER,
      "# Planted\n\nWritten from namespace a.",
      "text/markdown",
    );
    expect(res.status).toBe(400);
    expect(res.error).toBe("SEARCH_ERR_KNOWLEDGE_ID");
    expect((await call("GET", "/v1/knowledge-bases/kb_private/documents", WRITER)).status).toBe(400);
    expect((await call("DELETE", "/v1/knowledge-bases/kb_private/documents/planted.md", WRITER)).status).toBe(400);
    // b's own writer sees nothing planted.
    const b = await call("GET", "/v1/knowledge-bases/kb_private/documents", B_WRITER);
    expect(b.body.data).toMatchObject({ documents: [], uploaded: { documents: 0 }, total: { documents: 1 } });
  });

  it("answers 413 over the size limit, 400 for a damaged PDF, 415 for another type", async () => {
    const big = await put("kb_handbook", "big.txt", WRITER, "a".repeat(LIMIT + 1), "text/plain");
    expect(big.status).toBe(413);
    expect(big.body).toMatchObject({ code: 413, data: null });
    const bad = await put(
      "kb_handbook",
      "bad.pdf",
      WRITER,
      Buffer.from("%PDF-1.7\nthis is not a PDF body"),
      "application/pdf",
    );
    expect(bad.status).toBe(400);
    expect(bad.error).toBe("SEARCH_ERR_DOCUMENT_INVALID");
    expect(bad.body.message).toMatch(/^document cannot be converted: the PDF cannot be read/);
    const png = await put("kb_handbook", "x.png", WRITER, Buffer.from([0x89, 0x50]), "image/png");
    expect(png.status).toBe(415);
    expect(png.error).toBe("SEARCH_ERR_DOCUMENT_TYPE");
    const names = (await call("GET", "/v1/knowledge-bases/kb_handbook/documents", WRITER)).body.data.documents;
    expect(names).toHaveLength(4);
  });
});

describe("the KnowledgeBase around uploads", () => {
  it("counts them in status, keeps them through a refresh, and follows a delete", async () => {
    const counted = await eventually("status counts the uploads", async () => {
      const kb = await kbStatus(A, "handbook");
      return (kb.status?.uploaded as { documents?: number } | undefined)?.documents === 4 ? kb : undefined;
    });
    expect(counted.status).toMatchObject({ documents: 5, chunks: 5, uploaded: { documents: 4, chunks: 4 } });

    // A spec change refreshes the sources at once: the old source's document is replaced.
    await patch(
      client,
      { apiVersion: CAP, kind: "KnowledgeBase", ns: A, name: "handbook" },
      { spec: { sources: [{ name: "Opening hours v2", text: "The office now opens at eight." }] } },
    );
    const refreshed = await eventually("the refresh", async () => {
      const kb = await kbStatus(A, "handbook");
      return kb.status?.observedGeneration === kb.metadata.generation && kb.status?.progress === "1/1 sources"
        ? kb
        : undefined;
    });
    expect(refreshed.status).toMatchObject({ documents: 5, uploaded: { documents: 4 } });
    expect((await searchTexts(WRITER, "kb_handbook", "Where do I park my bicycle?"))[0]).toBe("parking.pdf");
    expect((await searchTexts(WRITER, "kb_handbook", "When does the office open?"))[0]).toBe("Opening hours v2");

    const del = await call("DELETE", "/v1/knowledge-bases/kb_handbook/documents/wifi.txt", WRITER);
    expect(del.body.data).toEqual({ knowledgeId: "kb_handbook", name: "wifi.txt", deleted: 1 });
    const after = await eventually("status follows the delete", async () => {
      const kb = await kbStatus(A, "handbook");
      return (kb.status?.uploaded as { documents?: number } | undefined)?.documents === 3 ? kb : undefined;
    });
    expect(after.status).toMatchObject({ documents: 4, chunks: 4 });
    expect(await searchTexts(WRITER, "kb_handbook", "guest wifi password")).not.toContain("wifi.txt");
  });
});
