// The benchmark's chunk vectors and its exact answers: REAL passages embedded by the model plus
// synthetic vectors (normalised mixtures of two real embeddings with Gaussian noise, σ = 0.03 per
// dimension), so the index holds a clustered, embedding-like distribution without an hour of
// embedding on two cores; and the exact top 10 of every query by brute force.
import { type ChunkWithVector, embeddingIdFor } from "../../services/search/src/store/types.ts";
import { rng } from "./corpus.ts";

export const PER_DOC = 1000;

function gaussian(r: () => number): number {
  return Math.sqrt(-2 * Math.log(r() + 1e-12)) * Math.cos(2 * Math.PI * r());
}

/** count unit vectors of `dims`, the first real.length being the real embeddings. */
export function chunkMatrix(real: Float32Array[], count: number, dims: number): Float32Array {
  const r = rng(7);
  const matrix = new Float32Array(count * dims);
  for (let i = 0; i < count; i++) {
    const row = matrix.subarray(i * dims, (i + 1) * dims);
    if (i < real.length) {
      row.set(real[i] as Float32Array);
      continue;
    }
    const a = real[Math.floor(r() * real.length)] as Float32Array;
    const b = real[Math.floor(r() * real.length)] as Float32Array;
    const w = 0.6 + 0.4 * r();
    let norm = 0;
    for (let d = 0; d < dims; d++) {
      const x = w * (a[d] as number) + (1 - w) * (b[d] as number) + 0.03 * gaussian(r);
      row[d] = x;
      norm += x * x;
    }
    norm = Math.sqrt(norm);
    for (let d = 0; d < dims; d++) row[d] = (row[d] as number) / norm;
  }
  return matrix;
}

/** Document `doc` of the knowledge base: chunks doc*PER_DOC .. +PER_DOC of the matrix. */
export function documentChunks(
  kb: string,
  doc: number,
  matrix: Float32Array,
  count: number,
  dims: number,
  texts: string[],
): ChunkWithVector[] {
  const chunks: ChunkWithVector[] = [];
  for (let i = doc * PER_DOC; i < Math.min(count, (doc + 1) * PER_DOC); i++) {
    const text = texts[i % texts.length] as string;
    chunks.push({
      vector: matrix.subarray(i * dims, (i + 1) * dims),
      record: {
        embeddingId: embeddingIdFor(kb, `doc${doc}`, i, text),
        knowledgeId: kb,
        docsId: `doc${doc}`,
        docsName: `Document ${doc}`,
        chunkIndex: i - doc * PER_DOC,
        totalChunks: PER_DOC,
        text,
      },
    });
  }
  return chunks;
}

/**
 * Chunk numbers of the exact 10 nearest (dot product of unit vectors) for each query: one pass
 * over the matrix keeping the best 10 (no sort of a million scores per query).
 */
export function exactTop10(matrix: Float32Array, count: number, dims: number, queries: Float32Array[]): Set<number>[] {
  return queries.map((q) => {
    const best: { i: number; score: number }[] = [];
    for (let i = 0; i < count; i++) {
      let dot = 0;
      const off = i * dims;
      for (let d = 0; d < dims; d++) dot += (matrix[off + d] as number) * (q[d] as number);
      if (best.length === 10 && dot <= (best[9] as { score: number }).score) continue;
      let at = best.length === 10 ? 9 : best.length;
      while (at > 0 && (best[at - 1] as { score: number }).score < dot) at--;
      best.splice(at, 0, { i, score: dot });
      if (best.length > 10) best.pop();
    }
    return new Set(best.map((b) => b.i));
  });
}

/** How many hits are among the exact top 10. */
export function inExact(exact: Set<number>, hits: { record: { docsId: string; chunkIndex: number } }[]): number {
  return hits.filter((h) => exact.has(Number(h.record.docsId.slice(3)) * PER_DOC + h.record.chunkIndex)).length;
}
