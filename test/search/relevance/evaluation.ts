// The search evaluation over the example knowledge base: the question set (questions.yaml), the
// example's inline documents as ingestion would send them, and the figures a run gives. Shared by
// test/search/relevance.test.ts (asserts them at the defaults) and bench/search/relevance.ts
// (prints them, with a sweep over minSimilarity and the cosine that separates best).
import { readFileSync } from "node:fs";
import { docsIdFor } from "@capstan/operator/translate";
import type { KnowledgeBase } from "@capstan/shared/api";
import { parse, parseAllDocuments } from "yaml";

const here = (p: string) => new URL(p, import.meta.url);

export interface AnswerableQuestion {
  q: string;
  /** docsName of the documents that answer it. */
  relevant: string[];
  /** When given, a relevant chunk must also contain this text. */
  evidence?: string;
}

export interface EvaluationSet {
  knowledgeBase: string;
  answerable: AnswerableQuestion[];
  unanswerable: string[];
}

export function loadEvaluationSet(): EvaluationSet {
  return parse(readFileSync(here("./questions.yaml"), "utf8")) as EvaluationSet;
}

export interface ExampleDocument {
  docsId: string;
  docsName: string;
  text: string;
}

/** The example KnowledgeBase (examples/knowledge-base.yaml) and its inline documents. */
export function exampleKnowledge(): { kb: KnowledgeBase; docs: ExampleDocument[] } {
  const text = readFileSync(here("../../../examples/knowledge-base.yaml"), "utf8");
  const kb = parseAllDocuments(text)
    .map((d) => d.toJS() as KnowledgeBase)
    .find((r) => r?.kind === "KnowledgeBase");
  if (!kb) throw new Error("examples/knowledge-base.yaml has no KnowledgeBase");
  const docs = kb.spec.sources.flatMap((s) =>
    s.text !== undefined ? [{ docsId: docsIdFor(s.name, "text"), docsName: s.name, text: s.text }] : [],
  );
  return { kb, docs };
}

/** What the evaluation needs of a search result. */
export interface Hit {
  docsName: string;
  text: string;
  score: number;
}

export interface Outcome {
  question: string;
  answerable: boolean;
  hits: Hit[];
  /** Rank (1-based) of the first relevant hit; 0 when none was returned. */
  firstRelevant: number;
}

export interface Figures {
  /** Answerable questions for which at least one relevant chunk was returned. */
  recall: number;
  /** Answerable questions whose first result is relevant. */
  top1: number;
  /** Mean reciprocal rank of the first relevant result (0 when none). */
  mrr: number;
  /** Returned results (of answerable questions) that are relevant. */
  precision: number;
  /** Unanswerable questions that returned nothing. */
  emptyWhenUnanswerable: number;
  answerable: number;
  unanswerable: number;
}

export function isRelevant(q: AnswerableQuestion, hit: Hit): boolean {
  return q.relevant.includes(hit.docsName) && (q.evidence === undefined || hit.text.includes(q.evidence));
}

/** Runs every question through `search` (one call each, in order). */
export async function runEvaluation(set: EvaluationSet, search: (text: string) => Promise<Hit[]>): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (const q of set.answerable) {
    const hits = await search(q.q);
    out.push({ question: q.q, answerable: true, hits, firstRelevant: hits.findIndex((h) => isRelevant(q, h)) + 1 });
  }
  for (const q of set.unanswerable)
    out.push({ question: q, answerable: false, hits: await search(q), firstRelevant: 0 });
  return out;
}

/** The outcomes as if the search had been made with this minSimilarity (hits must cover it). */
export function atThreshold(set: EvaluationSet, outcomes: Outcome[], minSimilarity: number): Outcome[] {
  const byText = new Map(set.answerable.map((q) => [q.q, q]));
  return outcomes.map((o) => {
    const hits = o.hits.filter((h) => h.score >= minSimilarity);
    const q = byText.get(o.question);
    return { ...o, hits, firstRelevant: q && o.answerable ? hits.findIndex((h) => isRelevant(q, h)) + 1 : 0 };
  });
}

export function figures(set: EvaluationSet, outcomes: Outcome[]): Figures {
  const byText = new Map(set.answerable.map((q) => [q.q, q]));
  const ans = outcomes.filter((o) => o.answerable);
  const un = outcomes.filter((o) => !o.answerable);
  const returned = ans.flatMap((o) => o.hits.map((h) => isRelevant(byText.get(o.question) as AnswerableQuestion, h)));
  const ratio = (n: number, d: number) => (d === 0 ? 0 : n / d);
  return {
    recall: ratio(ans.filter((o) => o.firstRelevant > 0).length, ans.length),
    top1: ratio(ans.filter((o) => o.firstRelevant === 1).length, ans.length),
    mrr: ratio(
      ans.reduce((s, o) => s + (o.firstRelevant > 0 ? 1 / o.firstRelevant : 0), 0),
      ans.length,
    ),
    precision: ratio(returned.filter(Boolean).length, returned.length),
    emptyWhenUnanswerable: ratio(un.filter((o) => o.hits.length === 0).length, un.length),
    answerable: ans.length,
    unanswerable: un.length,
  };
}
