// The search service on a real Qdrant that fails: killed and restarted under a bounded search
// load, frozen with SIGSTOP, and behind a fault proxy that refuses, swallows or cuts connections.
// Every search answers (200 or 503 in the envelope, never a 500, never a hang past the bound)
// and the service recovers without a restart. A private Qdrant server: killing the run's shared
// one would break other test files.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { QdrantStore } from "../../services/search/src/store/qdrant.ts";
import { type FaultProxy, startFaultProxy } from "../ground/fault-proxy.ts";
import { type QdrantServer, startQdrant } from "../ground/qdrant.ts";
import { HANDBOOK } from "./corpus.ts";
import {
  call,
  INTERNAL_TOKEN,
  ingest,
  knowledgeBase,
  type Reply,
  type Running,
  searchKey,
  startSearch,
} from "./helpers.ts";

const KEY = "cap_srch_faults";
const TIMEOUT_MS = 1500;
let server: QdrantServer;
let proxy: FaultProxy;
let s: Running;

/** One search; the helper's own 60 s abort is the "no hang" bound (the service's is ~3 × 1.5 s). */
const search = () =>
  call<unknown[]>(s.url, "/v1/rag/search", {
    token: KEY,
    body: { knowledgeIds: ["kb_faults"], text: "How many days of paid leave do I get?", minSimilarity: 0.5 },
  });

function expectAnswered(r: Reply<unknown[]>): void {
  expect([200, 503]).toContain(r.status);
  if (r.status === 503) {
    expect(r.body).toMatchObject({ code: 503, data: null });
    expect(r.body.message).toMatch(/^vector store unavailable: /);
  }
}

async function until(what: string, check: () => Promise<boolean>, tries = 300): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never: ${what}`);
}

beforeAll(async () => {
  server = await startQdrant();
  proxy = await startFaultProxy(server.httpPort);
  s = await startSearch({
    kbs: [knowledgeBase("faults")],
    keys: [searchKey("f", KEY, { knowledgeIds: ["kb_faults"] })],
    config: { qdrant: { url: proxy.url(), timeoutMs: TIMEOUT_MS, collectionPrefix: "capstan_faults" } },
  });
  await ingest(s.internalUrl, "kb_faults", HANDBOOK.slice(0, 4));
});
afterAll(async () => {
  await s?.close();
  await proxy?.close();
  await server?.stop(); // its storage folder, and every collection in it, goes too
});

describe("search while Qdrant fails", () => {
  it("the server killed and restarted under load: 200 or 503, then recovery without restarting search", async () => {
    const seen: number[] = [];
    let phase: "before" | "down" | "after" = "before";
    let okAfter = 0;
    // Four workers, at most 150 searches each: bounded, and they stop once recovery is seen.
    const worker = async () => {
      for (let i = 0; i < 150 && okAfter < 8; i++) {
        const r = await search();
        expectAnswered(r);
        seen.push(r.status);
        if (phase === "after" && r.status === 200) {
          expect(r.body.data?.length).toBeGreaterThan(0);
          okAfter++;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const load = Promise.all([worker(), worker(), worker(), worker()]);
    await until("searches before the kill", async () => seen.filter((x) => x === 200).length >= 4);
    phase = "down";
    await server.kill();
    await until("a 503 while down", async () => seen.includes(503));
    await server.restart();
    phase = "after";
    await load;
    expect(okAfter).toBeGreaterThanOrEqual(8);
    expect(seen).not.toContain(500);
  });

  it("the server frozen (SIGSTOP): every search returns 503 within its timeout, then recovers", async () => {
    const pid = server.proc.child.pid as number;
    process.kill(pid, "SIGSTOP");
    try {
      proxy.dropAll(); // idle keep-alive connections would otherwise be reused into the freeze
      const during = await Promise.all([search(), search(), search()]);
      for (const r of during) {
        expect(r.status).toBe(503);
        expectAnswered(r);
      }
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await until("search recovered after SIGCONT", async () => (await search()).status === 200);
  });

  it("refused, swallowed and cut connections answer 503, and pass-through recovers", async () => {
    for (const mode of ["refuse", "blackhole"] as const) {
      proxy.mode = mode;
      proxy.dropAll();
      const r = await search();
      expect(r.status).toBe(503);
      expectAnswered(r);
      proxy.mode = "pass";
      proxy.dropAll();
      expect((await search()).status).toBe(200);
    }
    // Cut every connection while searches are in flight: each still answers.
    const inFlight = [search(), search(), search()];
    proxy.dropAll();
    for (const r of await Promise.all(inFlight)) expectAnswered(r);
  });

  it("ingestion while Qdrant is down answers 503, and succeeds once it is back", async () => {
    await server.kill();
    const doc = { docsName: "Late", text: "Badges are renewed every January at the front desk." };
    const path = "/internal/v1/namespaces/default/knowledge-bases/kb_faults/documents/late";
    const down = await call(s.internalUrl, path, { method: "PUT", token: INTERNAL_TOKEN, body: doc });
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ code: 503, data: null });
    await server.restart();
    const up = await call(s.internalUrl, path, { method: "PUT", token: INTERNAL_TOKEN, body: doc });
    expect(up.status).toBe(200);
  });

  it("a collection deleted behind the store's back answers empty, then is re-created on the next write", async () => {
    const store = new QdrantStore({ url: server.url, collectionPrefix: "capstan_behind" });
    const info = {
      knowledgeId: "kb_behind",
      model: "test:model",
      dimensions: 2,
      chunking: { size: 800, overlap: 100 },
    };
    await store.ensureCollection(info);
    const record = (docsId: string) => ({
      embeddingId: "emb_0123456789abcdef0123456789abcdef",
      knowledgeId: "kb_behind",
      docsId,
      docsName: docsId,
      chunkIndex: 0,
      totalChunks: 1,
      text: docsId,
    });
    await store.replaceDocument("kb_behind", "a", [{ record: record("a"), vector: Float32Array.from([1, 0]) }]);
    const dropped = await fetch(`${server.url}/collections/${store.collectionName(info)}`, { method: "DELETE" });
    expect(dropped.status).toBe(200);
    const q = { keys: ["kb_behind"], vector: Float32Array.from([1, 0]), limit: 5, minScore: 0 };
    expect(await store.query(q)).toEqual([]);
    expect(await store.stats("kb_behind")).toEqual({ documents: 0, chunks: 0 });
    await store.replaceDocument("kb_behind", "a", [{ record: record("a"), vector: Float32Array.from([1, 0]) }]);
    expect((await store.query(q)).map((h) => h.score)).toEqual([1]);
    await store.close();
  });
});
