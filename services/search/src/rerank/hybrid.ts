// The built-in hybrid reranker: rerankedScore = w * score + (1 - w) * lexical, where lexical is
// a BM25 score of the query terms over the candidate set, divided by the best candidate's BM25
// so it lies in 0..1. Candidates sharing no term with the query keep w * score, so the order
// only changes where exact terms (names, codes, numbers) back the semantic match.
import type { RerankCandidate, Reranker } from "./types.ts";

const K1 = 1.2;
const B = 0.75;

/** Lower-cased letter/digit runs, accents stripped. */
export function terms(text: string): string[] {
  return (
    text
      .normalize("NFD")
      .replace(/\p{Mn}/gu, "")
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

/** BM25 of the query over each document, IDF taken over the documents given. */
export function bm25(query: string, docs: string[]): number[] {
  const q = [...new Set(terms(query))];
  const docTerms = docs.map(terms);
  const n = docs.length;
  const avgLen = docTerms.reduce((s, t) => s + t.length, 0) / Math.max(1, n);
  const df = new Map<string, number>();
  for (const t of docTerms) for (const term of new Set(t)) df.set(term, (df.get(term) ?? 0) + 1);
  return docTerms.map((t) => {
    const tf = new Map<string, number>();
    for (const term of t) tf.set(term, (tf.get(term) ?? 0) + 1);
    let score = 0;
    for (const term of q) {
      const f = tf.get(term) ?? 0;
      if (f === 0) continue;
      const d = df.get(term) ?? 0;
      const idf = Math.log(1 + (n - d + 0.5) / (d + 0.5));
      score += (idf * f * (K1 + 1)) / (f + K1 * (1 - B + (B * t.length) / Math.max(1, avgLen)));
    }
    return score;
  });
}

export class HybridReranker implements Reranker {
  readonly name = "hybrid";
  private readonly vectorWeight: number;

  constructor(vectorWeight = 0.9) {
    if (vectorWeight < 0 || vectorWeight > 1) throw new Error("vectorWeight must be within 0..1");
    this.vectorWeight = vectorWeight;
  }

  async rerank(query: string, candidates: RerankCandidate[]): Promise<number[]> {
    const lexical = bm25(
      query,
      candidates.map((c) => c.text),
    );
    const best = Math.max(0, ...lexical);
    return candidates.map((c, i) => {
      const l = best > 0 ? (lexical[i] as number) / best : 0;
      return this.vectorWeight * c.score + (1 - this.vectorWeight) * l;
    });
  }
}
