// Scores that mean what the reference says: the evaluation set (relevance/questions.yaml) over the
// example knowledge base, searched at the reference's defaults (maxResults 10, minSimilarity 0.75,
// neither sent), with the real model, on both stores (embedded and the run's real Qdrant). The
// thresholds are the measured run's figures rounded down (docs/benchmarks.md,
// `node bench/search/relevance.ts`): a change of model, mapping or documents that loses relevant
// answers or returns passages for questions the documents cannot answer fails here.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { SearchResult } from "../../services/search/src/index.ts";
import { dropCollections, qdrantPrefix } from "../ground/qdrant.ts";
import {
  call,
  INTERNAL_TOKEN,
  ingest,
  kbPath,
  knowledgeBase,
  type Running,
  searchKey,
  startSearch,
} from "./helpers.ts";
import { exampleKnowledge, figures, loadEvaluationSet, type Outcome, runEvaluation } from "./relevance/evaluation.ts";

const KEY = "cap_srch_relevance_eval";
const set = loadEvaluationSet();
const { docs } = exampleKnowledge();
const qdrantUrl = inject("qdrantUrl");
const prefix = qdrantPrefix("relevance");
const running: Running[] = [];
const outcomes: Record<"embedded" | "qdrant", Outcome[]> = { embedded: [], qdrant: [] };

async function evaluate(backend: "embedded" | "qdrant"): Promise<Outcome[]> {
  const s = await startSearch({
    kbs: [knowledgeBase("product-docs")],
    keys: [searchKey("eval", KEY, { knowledgeIds: [set.knowledgeBase] })],
    ...(backend === "qdrant" ? { config: { qdrant: { url: qdrantUrl, collectionPrefix: prefix } } } : {}),
  });
  running.push(s);
  await ingest(s.internalUrl, set.knowledgeBase, docs);
  return runEvaluation(set, async (text) => {
    // The reference's defaults: no maxResults, no minSimilarity.
    const r = await call<SearchResult[]>(s.url, "/v1/rag/search", {
      token: KEY,
      body: { knowledgeIds: [set.knowledgeBase], text },
    });
    if (r.status !== 200 || !r.body.data) throw new Error(`search answered ${r.status}: ${r.body.message}`);
    return r.body.data;
  });
}

beforeAll(async () => {
  outcomes.embedded = await evaluate("embedded");
  outcomes.qdrant = await evaluate("qdrant");
}, 300_000);

afterAll(async () => {
  for (const s of running) {
    await call(s.internalUrl, kbPath(set.knowledgeBase), {
      method: "DELETE",
      token: INTERNAL_TOKEN,
    }).catch(() => {});
    await s.close();
  }
  await dropCollections(qdrantUrl, prefix);
});

describe("the evaluation set at the reference's defaults", () => {
  it("has at least 40 answerable and 15 unanswerable questions over the example's documents", () => {
    expect(set.answerable.length).toBeGreaterThanOrEqual(40);
    expect(set.unanswerable.length).toBeGreaterThanOrEqual(15);
    const names = new Set(docs.map((d) => d.docsName));
    for (const q of set.answerable) for (const d of q.relevant) expect(names, q.q).toContain(d);
  });

  it.each(["embedded", "qdrant"] as const)("%s store: recall >= 0.9 and unanswerable questions empty >= 0.9", (b) => {
    const f = figures(set, outcomes[b]);
    console.info(`[relevance] ${b}: ${JSON.stringify(f)}`);
    expect(f.recall).toBeGreaterThanOrEqual(0.9);
    expect(f.emptyWhenUnanswerable).toBeGreaterThanOrEqual(0.9);
    // What the measured run also showed, so a regression in ranking is seen too.
    expect(f.top1).toBeGreaterThanOrEqual(0.8);
  });

  it("both stores return the same passages with the same scores", () => {
    expect(outcomes.qdrant.length).toBe(outcomes.embedded.length);
    outcomes.embedded.forEach((e, i) => {
      const q = outcomes.qdrant[i] as Outcome;
      expect(q.question).toBe(e.question);
      expect(q.hits.map((h) => h.docsName).sort(), e.question).toEqual(e.hits.map((h) => h.docsName).sort());
      const scoreOf = new Map(q.hits.map((h) => [h.docsName, h.score]));
      for (const h of e.hits) expect(Math.abs((scoreOf.get(h.docsName) as number) - h.score)).toBeLessThan(2e-6);
    });
  });
});
