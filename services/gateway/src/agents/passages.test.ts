import { describe, expect, it } from "vitest";
import {
  extractiveAnswer,
  NO_ANSWER,
  ragContextMessage,
  rankPassages,
  referencesText,
  sentences,
  stem,
  terms,
  toCitations,
} from "./passages.ts";
import type { SearchResult } from "./retrieval.ts";

function result(over: Partial<SearchResult> & { text: string }): SearchResult {
  return {
    knowledgeId: "kb_docs",
    docsName: "Doc",
    docsId: "doc_1",
    embeddingId: "emb_1",
    score: 0.8,
    rerankedScore: 0.8,
    source: "vector",
    metadata: { knowledgeId: "kb_docs", docsId: "doc_1", docsName: "Doc", chunkIndex: 0, totalChunks: 1 },
    ...over,
  };
}

const limits = result({
  docsName: "Rate limits",
  docsId: "doc_rl",
  score: 0.9,
  rerankedScore: 0.95,
  text: "Every access channel has a rate limit in requests per minute. The default is 100. Requests over the limit are rejected with HTTP 429 and a Retry-After header.",
});
const keys = result({
  docsName: "Keys",
  docsId: "doc_keys",
  score: 0.7,
  rerankedScore: 0.6,
  text: "Chat keys are stored in a Secret. A key past its expiry time is rejected with HTTP 401.",
});

describe("ranking and citations", () => {
  it("orders by rerankedScore (not score) and cuts to maxResults", () => {
    const ranked = rankPassages([keys, limits, result({ text: "x", score: 0.5, rerankedScore: 0.99 })], 2);
    expect(ranked.map((r) => r.text)).toEqual(["x", limits.text]);
  });

  it("numbers citations from 1 and keeps the source fields", () => {
    const [c] = toCitations([limits]);
    expect(c).toMatchObject({ index: 1, knowledgeId: "kb_docs", docsId: "doc_rl", chunkIndex: 0, rerankedScore: 0.95 });
  });
});

describe("extractive answer", () => {
  it("answers with the sentences that match the question, cited", () => {
    const a = extractiveAnswer("What is the default rate limit per minute?", toCitations([limits, keys]));
    expect(a.content).toContain("requests per minute");
    expect(a.content).toContain("[1]");
    expect(a.content).not.toContain("Secret");
    expect(a.citations.map((c) => c.docsId)).toEqual(["doc_rl"]);
  });

  it("renumbers citations to the passages used", () => {
    const a = extractiveAnswer("expired key 401", toCitations([limits, keys]));
    expect(a.content).toMatch(/401\. \[1\]$/);
    expect(a.citations).toHaveLength(1);
    expect(a.citations[0]).toMatchObject({ index: 1, docsId: "doc_keys" });
  });

  it("falls back to the best passage's opening when no term matches", () => {
    const a = extractiveAnswer("zzz", toCitations([limits]));
    expect(a.content.startsWith("Every access channel")).toBe(true);
  });

  it("says so when nothing was found", () => {
    expect(extractiveAnswer("anything", [])).toEqual({ content: NO_ANSWER, citations: [] });
  });

  it("can leave the citation marks out", () => {
    expect(extractiveAnswer("default limit", toCitations([limits]), { mark: false }).content).not.toContain("[");
  });

  it("matches a question's terms to a passage's by a crude stem", () => {
    expect(["expires", "expiry", "expired"].map(stem)).toEqual(["expir", "expir", "expir"]);
    expect(["keys", "key", "stream", "streamed", "class"].map(stem)).toEqual(["key", "key", "strea", "strea", "class"]);
    const a = extractiveAnswer("What happens when my chat key expires?", toCitations([limits, keys]));
    expect(a.citations.map((c) => c.docsId)).toEqual(["doc_keys"]);
  });

  it("splits sentences and terms", () => {
    expect(sentences("One. Two!  Three?")).toEqual(["One.", "Two!", "Three?"]);
    expect(terms("What is the Rate-Limit?")).toEqual(["rate", "limit"]);
  });
});

describe("RAG prompt", () => {
  it("numbers the passages and asks for citations", () => {
    const msg = ragContextMessage(toCitations([limits, keys]), true);
    expect(msg).toContain("[1] Rate limits (kb_docs)");
    expect(msg).toContain("[2] Keys (kb_docs)");
    expect(msg).toContain("Cite the passages");
    expect(ragContextMessage(toCitations([limits]), false)).not.toContain("Cite");
  });

  it("appends references", () => {
    expect(referencesText(toCitations([limits]))).toBe("\n\nReferences:\n[1] Rate limits (kb_docs, doc_rl)");
    expect(referencesText([])).toBe("");
  });
});
