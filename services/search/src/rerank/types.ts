// Rerankers turn the vector candidates of one query into rerankedScore values (0..1). Results
// are ordered by rerankedScore; score stays the vector similarity that minSimilarity filtered on.

export interface RerankCandidate {
  text: string;
  /** Vector similarity, 0..1. */
  score: number;
}

export interface Reranker {
  readonly name: string;
  /** One rerankedScore (0..1) per candidate, in candidate order. */
  rerank(query: string, candidates: RerankCandidate[]): Promise<number[]>;
}
