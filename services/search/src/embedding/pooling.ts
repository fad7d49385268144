// Pooling: one vector per text from the model's per-token output, as sentence-transformers'
// Pooling module does for the mode the model folder names (model-files.ts). Only the text's own
// tokens count (padding is beyond `length`), and the result is L2-normalised: search compares
// vectors by cosine, which normalising does not change, and Embedder promises unit vectors.
import type { Pooling } from "./model-files.ts";
import { normalize } from "./provider.ts";

/**
 * Pools rows `[offset, offset + length)` of `dims`-wide token vectors stored flat in `data`
 * (one sequence of a [batch, seq, dims] tensor: offset = b * seq * dims).
 */
export function pool(mode: Pooling, data: Float32Array, offset: number, length: number, dims: number): Float32Array {
  const v = new Float32Array(dims);
  const row = (j: number) => offset + j * dims;
  if (mode === "cls" || mode === "lasttoken") {
    const at = row(mode === "cls" ? 0 : length - 1);
    v.set(data.subarray(at, at + dims));
    return normalize(v);
  }
  if (mode === "max") {
    v.fill(Number.NEGATIVE_INFINITY);
    for (let j = 0; j < length; j++) {
      for (let d = 0; d < dims; d++) v[d] = Math.max(v[d] as number, data[row(j) + d] as number);
    }
    return normalize(v);
  }
  for (let j = 0; j < length; j++) {
    for (let d = 0; d < dims; d++) v[d] = (v[d] as number) + (data[row(j) + d] as number);
  }
  const divisor = mode === "mean" ? length : Math.sqrt(length);
  for (let d = 0; d < dims; d++) v[d] = (v[d] as number) / divisor;
  return normalize(v);
}
