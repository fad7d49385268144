// A KnowledgeBase's embedding-model change on the real API server, the real operator, the real
// search service and the run's real Qdrant: searched continuously (a bounded loop) while its
// spec switches from the local MiniLM model (A) to an OpenAI-compatible provider (B), no search
// answers empty, the first build of B fails and leaves A serving, the retry completes it, the
// switch happens, then the hits come from B's vectors and A's are deleted.
// Provider B is an in-test HTTP server speaking the OpenAI embeddings wire protocol, backed by
// the real local model (second-model.ts): it ranks like A but has its own collection (another
// size) and its own scores: cosB = (cosA + 0.25) / 1.25.
// A second knowledge base switches while the operator never gets the switch's answer: its status
// names model B with B's collection all the same (never B beside A's collection).
import { buildApp as buildSearch } from "@capstan/search";
import type { KnowledgeBase } from "@capstan/shared/api";
import type { SearchClient } from "@capstan/shared/clients/search-client";
import { ResourceView } from "@capstan/shared/resource-view";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { SearchDocuments } from "../../operator/src/ingest/search-documents.ts";
import type { Operator } from "../../operator/src/manager.ts";
import { cosineToScore, scoreToCosine } from "../../services/search/src/store/types.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { dropCollections, qdrantPrefix } from "../ground/qdrant.ts";
import {
  CAP,
  condition,
  create,
  eventually,
  get,
  type Obj,
  patch,
  serveSearchToOperator,
  startOperatorFor,
} from "../operator/helpers.ts";
import { localEmbedder } from "./helpers.ts";
import { B_DIMS, type SecondModel, startSecondModel } from "./second-model.ts";

const ns = `kb-switch-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = "model-switch-test-token-0123456789";
const ID = "kb_pumps";
const MODEL_A = "local:all-MiniLM-L6-v2";
const MODEL_B = "openai:pump-embed-512";
const QUESTION = "How long is the warranty on a pump?";

const sources = [
  { name: "Opening hours", text: "The support desk is open from 8:00 to 18:00 on weekdays." },
  { name: "Warranty", text: "Every pump carries a two-year warranty covering parts and labour." },
  { name: "Returns", text: "Unused items can be returned within thirty days for a full refund." },
];

let client: TestKube;
let operator: Operator;
let search: Awaited<ReturnType<typeof buildSearch>>;
let searchClient: SearchClient;
let provider: SecondModel;
const qdrantUrl = inject("qdrantUrl");
const prefix = qdrantPrefix("switch");
/** Knowledge ids whose next switch happens in search but whose answer the operator never gets. */
const switchAnswerLost = new Set<string>();
const questionsToB = () => provider.inputs.filter((t) => t === QUESTION).length;

const kbResource = (name = "pumps", knowledgeId = ID): KnowledgeBase =>
  ({
    apiVersion: CAP,
    kind: "KnowledgeBase",
    metadata: { name, namespace: ns },
    spec: { knowledgeId, chunking: { size: 200, overlap: 20 }, sources },
  }) as unknown as KnowledgeBase;
const collectionOf = (model: "a" | "b", knowledgeId: string) =>
  `${prefix}_${model === "a" ? "local_all_minilm_l6_v2_384" : `openai_pump_embed_512_${B_DIMS}`}/${ns}.${knowledgeId}`;

/** Points of the knowledge base in one of the prefix's model collections. */
async function pointsIn(model: "a" | "b"): Promise<number> {
  const name = model === "a" ? `${prefix}_local_all_minilm_l6_v2_384` : `${prefix}_openai_pump_embed_512_${B_DIMS}`;
  const res = await fetch(`${qdrantUrl}/collections/${name}/points/count`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    // The tenant is the store key: namespace and id.
    body: JSON.stringify({ filter: { must: [{ key: "knowledgeId", match: { value: `${ns}.${ID}` } }] }, exact: true }),
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`count in ${name}: ${res.status}`);
  return ((await res.json()) as { result: { count: number } }).result.count;
}

beforeAll(async () => {
  provider = await startSecondModel("pump-embed-512");
  // Provider B refuses document embeddings (503) until the test lets the build through.
  provider.refusing = (t) => t !== QUESTION;
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, ns);
  const view = new ResourceView();
  view.replace("KnowledgeBase", [kbResource()]);
  search = await buildSearch(
    { internalToken: TOKEN, logLevel: "silent", qdrant: { url: qdrantUrl, collectionPrefix: prefix } },
    {
      view,
      embedders: [await localEmbedder(), provider.embedder],
    },
  );
  const served = await serveSearchToOperator(client, ns, search, TOKEN, 30_000);
  searchClient = served.searchClient;
  const s = searchClient;
  // The operator's documents API: the real client, with a switch answer dropped on request.
  const documents: SearchDocuments = {
    ensureKnowledgeBase: (id, settings) => s.ensureKnowledgeBase(id, settings),
    deleteKnowledgeBase: (id) => s.deleteKnowledgeBase(id),
    upsertDocument: (id, docsId, doc) => s.upsertDocument(id, docsId, doc),
    deleteDocument: (id, docsId) => s.deleteDocument(id, docsId),
    pruneDocuments: (id, request) => s.pruneDocuments(id, request),
    getKnowledgeBase: (id) => s.getKnowledgeBase(id),
    carryUploads: (id, model) => s.carryUploads(id, model),
    switchKnowledgeBase: async (id, model) => {
      const answer = await s.switchKnowledgeBase(id, model);
      if (switchAnswerLost.delete(id.knowledgeId)) throw new Error("socket hang up (the switch's answer was lost)");
      return answer;
    },
  };
  operator = startOperatorFor(
    inject("kubeconfig"),
    ns,
    { search: { internalUrl: served.internalUrl }, resyncSeconds: 2 },
    { search: documents },
  );
  await operator.start();
});

afterAll(async () => {
  await operator?.stop();
  await search?.close();
  await provider?.embedder.close();
  await provider?.close();
  await dropCollections(qdrantUrl, prefix);
});

const kb = () => get(client, CAP, "KnowledgeBase", ns, "pumps");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("changing a KnowledgeBase's embedding model", () => {
  it("keeps answering from the old vector set until the new one is complete, then from the new one", async () => {
    await create(client, kbResource() as unknown as Obj);
    await eventually(
      "ingested with model A",
      async () => {
        const o = await kb();
        return o?.status?.servingModel === MODEL_A && o.status.chunks === 3 && condition(o, "Ready")?.status === "True";
      },
      120_000,
    );

    // Searched continuously from here on: at most 3000 searches, stopped once the test is done.
    type Seen = { phase: string; hits: number; top?: string | undefined; score?: number | undefined };
    const log: Seen[] = [];
    let phase = "before";
    let stop = false;
    const loop = (async () => {
      for (let i = 0; i < 3000 && !stop; i++) {
        const at = phase;
        const hits = await searchClient.search({ knowledgeIds: [ID], text: QUESTION, maxResults: 3 });
        log.push({ phase: at, hits: hits.length, top: hits[0]?.docsName, score: hits[0]?.score });
        await sleep(25);
      }
    })();
    const searched = (p: string, n: number) =>
      eventually(`${n} searches ${p}`, () => log.filter((l) => l.phase === p).length >= n);
    await searched("before", 3);

    await patch(
      client,
      { apiVersion: CAP, kind: "KnowledgeBase", ns, name: "pumps" },
      {
        spec: { embedding: provider.spec },
      },
    );
    phase = "spec changed";
    // Provider B refuses the documents: the build fails, A keeps serving, the status says so.
    const failed = await eventually("a failed build of model B in status", async () => {
      const o = await kb();
      return (o?.status?.building as { model?: string } | undefined)?.model === MODEL_B &&
        condition(o, "Ingested")?.status === "False"
        ? o
        : undefined;
    });
    expect(failed.status?.servingModel).toBe(MODEL_A);
    expect(failed.status).toMatchObject({ documents: 3, chunks: 3 });
    expect(provider.refused).toBeGreaterThan(0);
    phase = "failed build";
    await searched("failed build", 5);

    provider.refusing = undefined; // the retry (with backoff) completes the build and switches
    phase = "retrying";
    const done = await eventually(
      "serving model B",
      async () => {
        const o = await kb();
        // failures is part of the wait: under a full machine's load one status write was seen
        // with model B serving while the failed attempt's count was not yet cleared.
        const ok = o?.status?.servingModel === MODEL_B && !o.status.building && o.status.failures === 0;
        return ok && condition(o, "Ready")?.status === "True" ? o : undefined;
      },
      120_000,
    );
    expect(done.status).toMatchObject({ documents: 3, chunks: 3, failures: 0 });
    expect(done.status?.collection).toBe(collectionOf("b", ID));
    expect(done.status?.vectors).toMatchObject({ backend: "qdrant", size: B_DIMS });
    const questionsBefore = questionsToB();
    phase = "after";
    await searched("after", 5);
    stop = true;
    await loop;
    const phases = Object.entries(Object.groupBy(log, (l) => l.phase)).map(([p, l]) => `${p} ${l?.length}`);
    console.info(`[model switch] searches: ${phases.join(", ")}; empty: ${log.filter((l) => l.hits === 0).length}`);

    // No search in between answered empty, and every one found the answer.
    expect(log.filter((l) => l.hits === 0)).toEqual([]);
    expect(new Set(log.map((l) => l.top))).toEqual(new Set(["Warranty"]));
    // Before the switch the scores are A's; after it they are B's: cosB = (cosA + 0.25) / 1.25.
    const scoreA = log[0]?.score as number;
    const scoreB = cosineToScore((scoreToCosine(scoreA) + 0.25) / 1.25);
    for (const l of log.filter((x) => ["before", "spec changed", "failed build"].includes(x.phase))) {
      expect(l.score).toBeCloseTo(scoreA, 5);
    }
    for (const l of log.filter((x) => x.phase === "after")) expect(l.score).toBeCloseTo(scoreB, 3);
    expect(questionsToB()).toBeGreaterThan(questionsBefore); // the question is embedded by B now

    // The new vector set holds the documents; the old one's vectors go after the grace period.
    expect(await pointsIn("b")).toBe(3);
    await eventually("model A's vectors deleted", async () => (await pointsIn("a")) === 0, 60_000);
  });

  it("names the new model's collection when the switch happened but its answer was lost", async () => {
    provider.refusing = undefined;
    const VALVES = "kb_valves";
    const valves = () => get(client, CAP, "KnowledgeBase", ns, "valves");
    await create(client, kbResource("valves", VALVES) as unknown as Obj);
    await eventually("valves ingested with model A", async () => {
      const o = await valves();
      return o?.status?.servingModel === MODEL_A && o.status.chunks === 3;
    });

    switchAnswerLost.add(VALVES);
    await patch(
      client,
      { apiVersion: CAP, kind: "KnowledgeBase", ns, name: "valves" },
      { spec: { embedding: provider.spec } },
    );
    // The first status naming model B: the final one of the run whose switch call failed, or the
    // progress of a refresh that the events of that run's earlier writes started (from the
    // informer's status of before the switch). Either named A's collection before the fix.
    const switched = await eventually("valves serving model B", async () => {
      const o = await valves();
      return o?.status?.servingModel === MODEL_B ? o : undefined;
    });
    const ingested = condition(switched, "Ingested");
    console.info(`[model switch] lost answer: first status with model B has Ingested ${ingested?.reason}`);
    expect(switchAnswerLost.has(VALVES)).toBe(false); // the switch was asked, its answer dropped
    expect(switched.status?.building).toBeUndefined();
    expect(switched.status?.collection).toBe(collectionOf("b", VALVES));
    expect(switched.status?.vectors).toMatchObject({ backend: "qdrant", size: B_DIMS });
  });
});
