// Relevance of search over the example knowledge base, measured with the evaluation set
// (test/search/relevance/questions.yaml), the real model and the embedded store:
//   1. the figures at the reference's defaults (maxResults 10, minSimilarity 0.75, neither sent);
//   2. a sweep over minSimilarity (from one search per question at minSimilarity 0);
//   3. the raw cosine interval that separates relevant from unrelated best (highest recall +
//      unanswerable-empty rate), whose middle is RELEVANT_COSINE in services/search/src/store/types.ts.
// Usage: node bench/search/relevance.ts [--list]   (--list prints every question's best cosines)
// (--smoke runs the same; it takes seconds. The run stops unless every document was ingested and
// every answerable question found hits at minSimilarity 0.)
import type { SearchResult } from "../../services/search/src/index.ts";
import { RELEVANT_COSINE, scoreToCosine } from "../../services/search/src/store/types.ts";
import { call, ingest, knowledgeBase, searchKey, startSearch } from "../../test/search/helpers.ts";
import {
  atThreshold,
  exampleKnowledge,
  figures,
  type Hit,
  isRelevant,
  loadEvaluationSet,
  runEvaluation,
} from "../../test/search/relevance/evaluation.ts";
import { expectAtLeast, expectCount, workChecked } from "../work.ts";

const KEY = "cap_srch_relevance_bench";
const set = loadEvaluationSet();
const { docs } = exampleKnowledge();
const s = await startSearch({
  kbs: [knowledgeBase("product-docs")],
  keys: [searchKey("bench", KEY, { knowledgeIds: [set.knowledgeBase] })],
});
await ingest(s.internalUrl, set.knowledgeBase, docs);
const search = (extra: Record<string, number>) => async (text: string) => {
  const r = await call<SearchResult[]>(s.url, "/v1/rag/search", {
    token: KEY,
    body: { knowledgeIds: [set.knowledgeBase], text, ...extra },
  });
  if (!r.body.data) throw new Error(`search answered ${r.status}: ${r.body.message}`);
  return r.body.data as Hit[];
};

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const row = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
console.log(
  `${set.answerable.length} answerable and ${set.unanswerable.length} unanswerable questions; ` +
    `${docs.length} documents; RELEVANT_COSINE ${RELEVANT_COSINE}\n`,
);

const atDefaults = figures(set, await runEvaluation(set, search({})));
console.log("At the defaults (maxResults 10, minSimilarity 0.75):");
console.log(row(["recall", "top-1", "MRR", "precision", "unanswerable → nothing"]));
console.log(row(["---", "---", "---", "---", "---"]));
console.log(
  row([
    pct(atDefaults.recall),
    pct(atDefaults.top1),
    atDefaults.mrr.toFixed(3),
    pct(atDefaults.precision),
    pct(atDefaults.emptyWhenUnanswerable),
  ]),
);

const all = await runEvaluation(set, search({ minSimilarity: 0, maxResults: 100 }));
expectCount("questions evaluated", all.length, set.answerable.length + set.unanswerable.length);
expectCount(
  "answerable questions with hits at minSimilarity 0",
  all.filter((o) => o.answerable && o.hits.length > 0).length,
  set.answerable.length,
);
// The expected documents: most answerable questions find a relevant chunk among 100 hits.
expectAtLeast(
  "answerable questions whose relevant document is among their hits",
  all.filter((o) => o.firstRelevant > 0).length,
  Math.ceil(set.answerable.length / 2),
);
console.log("\nSweep (recall and emptiness are exact; ranks come from the minSimilarity 0 ordering):");
console.log(row(["minSimilarity", "cosine", "recall", "top-1", "precision", "unanswerable → nothing"]));
console.log(row(["---", "---", "---", "---", "---", "---"]));
for (let t = 0.5; t <= 0.951; t += 0.05) {
  const f = figures(set, atThreshold(set, all, t));
  const cells = [pct(f.recall), pct(f.top1), pct(f.precision), pct(f.emptyWhenUnanswerable)];
  console.log(row([t.toFixed(2), scoreToCosine(t).toFixed(3), ...cells]));
}

// Raw cosines: each answerable question's best relevant chunk, each unanswerable one's best chunk.
const byText = new Map(set.answerable.map((q) => [q.q, q]));
const relevantCos = all
  .filter((o) => o.answerable)
  .map((o) => {
    const q = byText.get(o.question);
    const best = o.hits.filter((h) => q && isRelevant(q, h)).reduce((m, h) => Math.max(m, h.score), 0);
    return { q: o.question, cos: scoreToCosine(best) };
  });
const unrelatedCos = all
  .filter((o) => !o.answerable)
  .map((o) => ({ q: o.question, cos: scoreToCosine(o.hits[0] ? Math.max(...o.hits.map((h) => h.score)) : 0) }));
const cuts = [...new Set([...relevantCos, ...unrelatedCos].map((x) => x.cos))].sort((a, b) => a - b);
let best = { lo: 0, hi: 0, value: -1 };
for (let i = 0; i < cuts.length; i++) {
  // A threshold in (cuts[i-1], cuts[i]]: every cosine >= cuts[i] passes.
  const t = cuts[i] as number;
  const recall = relevantCos.filter((x) => x.cos >= t).length / relevantCos.length;
  const empty = unrelatedCos.filter((x) => x.cos < t).length / unrelatedCos.length;
  if (recall + empty > best.value) best = { lo: (cuts[i - 1] ?? -1) as number, hi: t, value: recall + empty };
}
console.log(
  `\nBest separation: a cosine threshold in (${best.lo.toFixed(4)}, ${best.hi.toFixed(4)}] ` +
    `(recall + emptiness ${best.value.toFixed(3)}); middle ${((best.lo + best.hi) / 2).toFixed(4)}`,
);
if (process.argv.includes("--list")) {
  console.log("\nanswerable, best relevant cosine:");
  for (const x of relevantCos.sort((a, b) => a.cos - b.cos)) console.log(`  ${x.cos.toFixed(3)}  ${x.q}`);
  console.log("unanswerable, best cosine:");
  for (const x of unrelatedCos.sort((a, b) => b.cos - a.cos)) console.log(`  ${x.cos.toFixed(3)}  ${x.q}`);
}
workChecked(`${all.length} questions searched over ${docs.length} documents, every answerable one with hits`);
await s.close();
