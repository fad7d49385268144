// Pure translation of retrieved passages: citations, the context message a RAG prompt carries, the
// appended references list, and the extractive agent's answer (the passage sentences that best
// match the question, each marked with its citation number).
import type { SearchResult } from "./retrieval.ts";
import type { Citation } from "./types.ts";

export function rankPassages(results: SearchResult[], max: number): SearchResult[] {
  return [...results].sort((a, b) => b.rerankedScore - a.rerankedScore).slice(0, Math.max(0, max));
}

export function toCitations(passages: SearchResult[]): Citation[] {
  return passages.map((p, i) => ({
    index: i + 1,
    knowledgeId: p.knowledgeId,
    docsId: p.docsId,
    docsName: p.docsName,
    embeddingId: p.embeddingId,
    chunkIndex: p.metadata.chunkIndex,
    score: p.score,
    rerankedScore: p.rerankedScore,
    source: p.source,
    text: p.text,
  }));
}

/** The system message that puts the passages in an LLM prompt, numbered for citation. */
export function ragContextMessage(citations: Citation[], cite: boolean): string {
  if (citations.length === 0) {
    return (
      "No passage of the knowledge base matched this question. Unless the conversation so far answers it, " +
      "say that you do not know; do not make up an answer."
    );
  }
  const lines = [
    "Answer using the passages below from the knowledge base." +
      (cite ? " Cite the passages you use with their number in square brackets, e.g. [1]." : ""),
    "If the passages do not contain the answer, say so.",
    "",
  ];
  for (const c of citations) lines.push(`[${c.index}] ${c.docsName || c.docsId} (${c.knowledgeId})`, c.text.trim(), "");
  return lines.join("\n").trimEnd();
}

/** The references list appended to an answer when citations are "append". */
export function referencesText(citations: Citation[]): string {
  if (citations.length === 0) return "";
  const lines = citations.map((c) => `[${c.index}] ${c.docsName || c.docsId} (${c.knowledgeId}, ${c.docsId})`);
  return `\n\nReferences:\n${lines.join("\n")}`;
}

const STOPWORDS = new Set(
  (
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it its " +
    "me my no not of on or our so than that the their them then there these they this to too was we were what " +
    "when where which who why will with would you your about after also any all am"
  ).split(" "),
);

export function terms(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((t) => t.length > 1 && !STOPWORDS.has(t));
}

/**
 * A crude stem for matching question terms to passage terms: a plural "s" dropped, then the first
 * five letters, so "expires" meets "expiry", "keys" meets "key" and "streamed" meets "stream".
 */
export function stem(term: string): string {
  const t = term.length > 3 && term.endsWith("s") && !term.endsWith("ss") ? term.slice(0, -1) : term;
  return t.length > 5 ? t.slice(0, 5) : t;
}

export function sentences(text: string): string[] {
  return (text.replace(/\s+/g, " ").match(/[^.!?]+(?:[.!?]+|$)/g) ?? [])
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The extractive agent's answer when no passage passes the Agent's minSimilarity. */
export const NO_ANSWER = "I don't know: nothing in the knowledge base matches this question closely enough.";

export interface ExtractiveAnswer {
  content: string;
  /** The citations the answer refers to (renumbered from 1). */
  citations: Citation[];
}

/**
 * Picks up to `maxSentences` sentences from the passages by how many of the question's terms they
 * contain (weighted by the passage's score), keeps them in reading order per passage, and marks
 * each passage's sentences with its citation number.
 */
export function extractiveAnswer(
  question: string,
  citations: Citation[],
  opts: { maxSentences?: number; maxChars?: number; mark?: boolean } = {},
): ExtractiveAnswer {
  if (citations.length === 0) return { content: NO_ANSWER, citations: [] };
  const maxSentences = opts.maxSentences ?? 3;
  const maxChars = opts.maxChars ?? 700;
  const wanted = new Set(terms(question).map(stem));
  type Candidate = { cite: number; pos: number; text: string; score: number };
  const candidates: Candidate[] = [];
  citations.forEach((c, ci) => {
    const weight = c.rerankedScore ?? c.score;
    sentences(c.text).forEach((text, pos) => {
      const ts = new Set(terms(text).map(stem));
      let hits = 0;
      for (const t of wanted) if (ts.has(t)) hits++;
      // Earlier passages and earlier sentences win ties: the search already ranked them.
      candidates.push({ cite: ci, pos, text, score: hits * (0.5 + weight) - ci * 1e-3 - pos * 1e-6 });
    });
  });
  let chosen = candidates.filter((c) => c.score > 0).sort((a, b) => b.score - a.score);
  if (chosen.length === 0) chosen = candidates.filter((c) => c.cite === 0); // best passage's opening
  const picked: Candidate[] = [];
  let chars = 0;
  for (const c of chosen) {
    if (picked.length >= maxSentences) break;
    if (picked.length > 0 && chars + c.text.length > maxChars) continue;
    picked.push(c);
    chars += c.text.length;
  }
  picked.sort((a, b) => a.cite - b.cite || a.pos - b.pos);
  const used = [...new Set(picked.map((p) => p.cite))];
  const renumber = new Map(used.map((ci, i) => [ci, i + 1]));
  const parts: string[] = [];
  for (const ci of used) {
    const text = picked
      .filter((p) => p.cite === ci)
      .map((p) => p.text)
      .join(" ");
    parts.push(opts.mark === false ? text : `${text} [${renumber.get(ci)}]`);
  }
  return {
    content: parts.join(" "),
    citations: used.map((ci, i) => ({ ...(citations[ci] as Citation), index: i + 1 })),
  };
}
