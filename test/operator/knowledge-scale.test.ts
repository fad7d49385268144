// A knowledge base with three 10,000-page sources leaves no annotation growth (issue #26): real
// API server, the operator (in this process) and a real search service (in this process, its
// documents API on loopback, the embedded store). One KnowledgeBase is refreshed first with three
// one-page sources, then with the same three sources grown to 10,000 pages each. The test proves
// that the KnowledgeBase object does not grow with its documents: its annotations stay the same
// size (and under 2 KiB), the whole object stays a few KiB, and status still counts all 30,000
// documents, which search holds, 10,000 per source. Before #26 the operator kept every document
// id in the `capstan.dev/documents` annotation: 30,000 ids would have been about 1 MiB, the most
// an object may be.
//
// What is not real here, and why:
//  - The sources are ConfigMaps of 10,000 keys (one document each), not crawls: the scraper renders
//    every page in Chromium (about 20 pages/s on this 2-core machine, bench/scraper/RESULTS.md), so
//    30,000 crawled pages would take half an hour. The annotation question does not depend on
//    where the pages come from (the refresh writes every source's documents the same way), and the
//    crawl path at 20,000 pages is measured by bench/knowledge/bench.ts, which checks the
//    annotations too.
//  - The embedding model is a hash of the words (HashEmbedder below, test-only, deterministic):
//    30,000 documents through the real model take minutes. Search stores and counts its vectors as
//    it would any model's; the KnowledgeBase names it as an OpenAI-compatible model, which is how
//    search is given a model it does not load itself.
import { createHash } from "node:crypto";
import { buildApp as buildSearch, type Embedder } from "@capstan/search";
import type { IngestedDocument } from "@capstan/shared/clients/search-client";
import { KubeSource, ResourceView } from "@capstan/shared/resource-view";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import {
  CAP,
  condition,
  create,
  type Obj,
  patch,
  pathOf,
  refreshedKnowledgeBase,
  serveSearchToOperator,
  startOperatorFor,
  TEST_KEY_VERIFIER,
} from "./helpers.ts";

const ns = `kb-scale-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = "knowledge-scale-test-token-0123456789";
const KB = { apiVersion: CAP, kind: "KnowledgeBase", ns, name: "library" };
const PAGES = 10_000;
const SOURCES = ["manuals", "guides", "notes"];
const MODEL = "test-hash-words";
const DIMENSIONS = 64;

/** A test-only embedding model: each word hashed into one of 64 dimensions, counted, normalised. */
class HashEmbedder implements Embedder {
  readonly name = `openai:${MODEL}`;
  readonly dimensions = DIMENSIONS;
  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((text) => {
      const v = new Float32Array(DIMENSIONS);
      for (const word of text.toLowerCase().split(/\W+/).filter(Boolean)) {
        const d = createHash("sha1").update(word).digest().readUInt8(0) % DIMENSIONS;
        v[d] = (v[d] as number) + 1;
      }
      const norm = Math.hypot(...v) || 1;
      return v.map((x) => x / norm);
    });
  }
  async close(): Promise<void> {}
}

let client: TestKube;
let operator: Operator;
let closeSearch: () => Promise<void>;
let documents: () => Promise<IngestedDocument[]>;

/** The ConfigMap of one source with `pages` keys, each a short page of its own. */
function configMap(source: string, pages: number): Obj {
  const data: Record<string, string> = {};
  for (let i = 0; i < pages; i++) {
    data[`page-${String(i).padStart(5, "0")}.md`] = `${source} page ${i}: how to look after telescope ${i}.`;
  }
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name: source, namespace: ns }, data };
}

/** Creates the ConfigMap, or replaces its data when it exists. */
async function putConfigMap(cm: Obj): Promise<void> {
  const path = pathOf("v1", "ConfigMap", ns, cm.metadata.name);
  const existing = await client.json<Obj>(path).catch(() => undefined);
  if (!existing) await create(client, cm);
  else await client.json(path, { method: "PUT", body: { ...existing, data: cm.data } });
}

/** The KnowledgeBase once the refresh of its current generation has ended with every source in. */
const refreshed = () => refreshedKnowledgeBase(client, ns, "library", 150_000);

/** Bytes of the object's annotations (keys and values), and of the whole object as JSON. */
function sizes(kb: Obj): { annotations: number; object: number } {
  const annotations = Object.entries(kb.metadata.annotations ?? {}).reduce(
    (n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v),
    0,
  );
  return { annotations, object: Buffer.byteLength(JSON.stringify(kb)) };
}

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, ns);
  // Search as in served-search.ts, but with the test-only model in place of the local one.
  const view = new ResourceView();
  const source = new KubeSource(view, client, { namespace: ns, kinds: ["SearchKey", "KnowledgeBase"] });
  await source.start();
  const app = await buildSearch(
    { internalToken: TOKEN, keyVerifier: TEST_KEY_VERIFIER, logLevel: "warn" },
    { view, embedders: [new HashEmbedder()] },
  );
  const served = await serveSearchToOperator(client, ns, app, TOKEN, 60_000);
  closeSearch = async () => {
    source.stop();
    await app.close();
  };
  documents = async () => {
    const all: IngestedDocument[] = [];
    let from: string | undefined;
    do {
      const page = await served.searchClient.ingestedDocuments(
        { namespace: ns, knowledgeId: "kb_library" },
        { limit: 1000, ...(from ? { from } : {}) },
      );
      all.push(...page.documents);
      from = page.next;
    } while (from);
    return all;
  };
  operator = startOperatorFor(inject("kubeconfig"), ns, { search: { internalUrl: served.internalUrl } });
  await operator.start();
}, 180_000);

afterAll(async () => {
  await operator?.stop();
  await closeSearch?.();
});

describe("a knowledge base with three 10,000-page sources", () => {
  it("leaves no annotation growth, and status and search count all 30,000 documents", async () => {
    // A tiny first refresh: each source one page.
    for (const s of SOURCES) await putConfigMap(configMap(s, 1));
    await create(client, {
      apiVersion: CAP,
      kind: "KnowledgeBase",
      metadata: { name: "library", namespace: ns },
      spec: {
        embedding: { provider: "openai", model: MODEL, baseURL: "http://127.0.0.1:9/v1", dimensions: DIMENSIONS },
        sources: SOURCES.map((s) => ({ name: s, configMap: { name: s } })),
      },
    });
    const small = await refreshed();
    expect(small.status).toMatchObject({ documents: SOURCES.length, failures: 0 });
    const before = sizes(small);

    // The same sources, 10,000 pages each, refreshed.
    for (const s of SOURCES) await putConfigMap(configMap(s, PAGES));
    await patch(client, KB, { spec: { description: "grown" } });
    const large = await refreshed();
    expect(large.status).toMatchObject({ documents: SOURCES.length * PAGES, failures: 0 });
    expect(condition(large, "Ready")?.status).toBe("True");
    const after = sizes(large);
    console.log(`KnowledgeBase bytes at 3 and at 30,000 documents: ${JSON.stringify({ before, after })}`);
    expect(after.annotations).toBeLessThanOrEqual(before.annotations);
    expect(after.annotations).toBeLessThan(2048);
    expect(large.metadata.annotations?.["capstan.dev/documents"]).toBeUndefined();
    // The whole object: the same few KiB, whatever the document count (the counts' digits aside).
    expect(after.object).toBeLessThan(before.object + 256);

    // Search holds them: 10,000 documents of each source, each page once.
    const held = await documents();
    expect(held).toHaveLength(SOURCES.length * PAGES);
    const bySource = new Map<string, Set<string>>();
    for (const d of held) bySource.set(d.source ?? "", (bySource.get(d.source ?? "") ?? new Set()).add(d.docsId));
    expect([...bySource.values()].map((ids) => ids.size)).toEqual(SOURCES.map(() => PAGES));
    expect(new Set(held.map((d) => d.refresh)).size).toBe(1);
  }, 240_000);
});
