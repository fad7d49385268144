// What the search service needs from an embedding model: unit-length vectors for a batch of
// texts. Implementations: the in-process ONNX model (local.ts) and an OpenAI-compatible
// /v1/embeddings endpoint (openai.ts). CachedEmbedder adds a bounded query cache on top.

export interface Embedder {
  /** Stable name, e.g. "local:all-MiniLM-L6-v2"; collections remember which model filled them. */
  readonly name: string;
  readonly dimensions: number;
  /** One unit-length vector per text, in order. */
  embed(texts: string[]): Promise<Float32Array[]>;
  /** Documents (ingestion), where the embedder keeps them apart from queries (the local model). */
  embedDocuments?(texts: string[]): Promise<Float32Array[]>;
  close(): Promise<void>;
}

export function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += (v[i] as number) * (v[i] as number);
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) / norm;
  return v;
}

/** A bounded LRU cache of query embeddings in front of an embedder (Map keeps insertion order). */
export class CachedEmbedder implements Embedder {
  private readonly cache = new Map<string, Float32Array>();
  private readonly inner: Embedder;
  private readonly capacity: number;
  hits = 0;
  misses = 0;

  constructor(inner: Embedder, capacity: number) {
    this.inner = inner;
    this.capacity = capacity;
  }

  get name(): string {
    return this.inner.name;
  }

  get dimensions(): number {
    return this.inner.dimensions;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: (Float32Array | undefined)[] = texts.map((t) => {
      const hit = this.cache.get(t);
      if (hit) {
        this.cache.delete(t);
        this.cache.set(t, hit);
      }
      return hit;
    });
    const missing = [...new Set(texts.filter((_t, i) => out[i] === undefined))];
    this.hits += texts.length - texts.filter((_t, i) => out[i] === undefined).length;
    this.misses += missing.length;
    if (missing.length > 0) {
      const vectors = await this.inner.embed(missing);
      const byText = new Map(missing.map((t, i) => [t, vectors[i] as Float32Array]));
      for (const [text, vector] of byText) {
        if (this.capacity <= 0) break;
        this.cache.set(text, vector);
        if (this.cache.size > this.capacity) this.cache.delete(this.cache.keys().next().value as string);
      }
      for (let i = 0; i < texts.length; i++) out[i] ??= byText.get(texts[i] as string);
    }
    return out as Float32Array[];
  }

  /** Documents bypass the cache: they are embedded once and would only evict queries. */
  embedUncached(texts: string[]): Promise<Float32Array[]> {
    return this.inner.embedDocuments ? this.inner.embedDocuments(texts) : this.inner.embed(texts);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
