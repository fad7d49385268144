// The embedded vector store: one HNSW index (usearch, cosine) per knowledge base, chunk payloads
// in memory, persisted to <dataDir>/collections/<knowledgeId>/ (index.usearch, chunks.json,
// meta.json) by a debounced flush (write to a temporary file, then rename) and on close.
// Without a dataDir it keeps everything in memory (tests, throwaway standalone runs).
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Index, MetricKind, ScalarKind } from "usearch";
import {
  type ChunkRecord,
  type ChunkWithVector,
  type CollectionInfo,
  type CollectionLayout,
  type CollectionStats,
  cosineToScore,
  mergeHits,
  StoreError,
  type VectorHit,
  type VectorQuery,
  type VectorStore,
} from "./types.ts";

export interface EmbeddedStoreOptions {
  dataDir?: string | undefined;
  /** HNSW graph degree (M). */
  connectivity?: number;
  expansionAdd?: number;
  expansionSearch?: number;
  flushDelayMs?: number;
  onError?: (err: Error) => void;
}

interface Collection {
  info: CollectionInfo;
  index: Index;
  chunks: Map<bigint, ChunkRecord>;
  docs: Map<string, bigint[]>;
  nextKey: bigint;
  dirty: boolean;
}

interface PersistedChunks {
  nextKey: string;
  chunks: [string, ChunkRecord][];
}

export class EmbeddedStore implements VectorStore {
  readonly kind = "embedded" as const;
  private readonly collections = new Map<string, Collection>();
  private readonly opts: EmbeddedStoreOptions;
  private timer: NodeJS.Timeout | undefined;

  constructor(opts: EmbeddedStoreOptions = {}) {
    this.opts = opts;
    if (opts.dataDir) this.loadAll(opts.dataDir);
  }

  layout(info: CollectionInfo): CollectionLayout {
    return {
      backend: "embedded",
      collection: info.knowledgeId,
      tenant: info.knowledgeId,
      vectorSize: info.dimensions,
      distance: "Cosine",
      hnsw: {
        m: this.opts.connectivity ?? 16,
        efConstruct: this.opts.expansionAdd ?? 128,
        efSearch: this.opts.expansionSearch ?? 256,
      },
    };
  }

  private newIndex(dimensions: number): Index {
    return new Index({
      dimensions,
      metric: MetricKind.Cos,
      quantization: ScalarKind.F32,
      connectivity: this.opts.connectivity ?? 16,
      expansion_add: this.opts.expansionAdd ?? 128,
      expansion_search: this.opts.expansionSearch ?? 256,
      multi: false,
    });
  }

  private dirOf(knowledgeId: string): string | undefined {
    return this.opts.dataDir ? join(this.opts.dataDir, "collections", knowledgeId) : undefined;
  }

  private loadAll(dataDir: string): void {
    const root = join(dataDir, "collections");
    mkdirSync(root, { recursive: true });
    for (const name of readdirSync(root)) {
      const dir = join(root, name);
      try {
        const info = JSON.parse(readFileSync(join(dir, "meta.json"), "utf8")) as CollectionInfo;
        const col = this.emptyCollection(info);
        if (existsSync(join(dir, "chunks.json"))) {
          const saved = JSON.parse(readFileSync(join(dir, "chunks.json"), "utf8")) as PersistedChunks;
          col.nextKey = BigInt(saved.nextKey);
          for (const [key, record] of saved.chunks) this.track(col, BigInt(key), record);
          if (col.chunks.size > 0) col.index.load(join(dir, "index.usearch"));
        }
        this.collections.set(info.knowledgeId, col);
      } catch (err) {
        this.opts.onError?.(new StoreError(`cannot load collection ${name}: ${(err as Error).message}`));
      }
    }
  }

  private emptyCollection(info: CollectionInfo): Collection {
    return {
      info,
      index: this.newIndex(info.dimensions),
      chunks: new Map(),
      docs: new Map(),
      nextKey: 1n,
      dirty: true,
    };
  }

  private track(col: Collection, key: bigint, record: ChunkRecord): void {
    col.chunks.set(key, record);
    const keys = col.docs.get(record.docsId);
    if (keys) keys.push(key);
    else col.docs.set(record.docsId, [key]);
  }

  private collection(knowledgeId: string): Collection {
    const col = this.collections.get(knowledgeId);
    if (!col) throw new StoreError(`no collection for knowledge base ${knowledgeId}`);
    return col;
  }

  async ensureCollection(info: CollectionInfo): Promise<void> {
    const existing = this.collections.get(info.knowledgeId);
    if (existing && existing.info.model === info.model && existing.info.dimensions === info.dimensions) {
      if (
        existing.info.chunking.size !== info.chunking.size ||
        existing.info.chunking.overlap !== info.chunking.overlap
      ) {
        existing.info = { ...info };
        this.markDirty(existing);
      }
      return;
    }
    const col = this.emptyCollection({ ...info });
    this.collections.set(info.knowledgeId, col);
    this.markDirty(col);
  }

  async getCollection(knowledgeId: string): Promise<CollectionInfo | undefined> {
    const info = this.collections.get(knowledgeId)?.info;
    return info ? { ...info } : undefined;
  }

  async dropCollection(knowledgeId: string): Promise<boolean> {
    const existed = this.collections.delete(knowledgeId);
    const dir = this.dirOf(knowledgeId);
    if (dir) rmSync(dir, { recursive: true, force: true });
    return existed;
  }

  async replaceDocument(knowledgeId: string, docsId: string, chunks: ChunkWithVector[]): Promise<void> {
    const col = this.collection(knowledgeId);
    for (const c of chunks) {
      if (c.vector.length !== col.info.dimensions) {
        throw new StoreError(`vector has ${c.vector.length} dimensions, collection has ${col.info.dimensions}`);
      }
    }
    this.removeDoc(col, docsId);
    if (chunks.length > 0) {
      const keys = new BigUint64Array(chunks.length);
      const matrix = new Float32Array(chunks.length * col.info.dimensions);
      chunks.forEach((c, i) => {
        const key = col.nextKey++;
        keys[i] = key;
        matrix.set(c.vector, i * col.info.dimensions);
        this.track(col, key, { ...c.record, knowledgeId, docsId });
      });
      col.index.add(keys, matrix);
    }
    this.markDirty(col);
  }

  private removeDoc(col: Collection, docsId: string): number {
    const keys = col.docs.get(docsId);
    if (!keys) return 0;
    col.index.remove(BigUint64Array.from(keys));
    for (const k of keys) col.chunks.delete(k);
    col.docs.delete(docsId);
    return keys.length;
  }

  async deleteDocument(knowledgeId: string, docsId: string): Promise<number> {
    const col = this.collections.get(knowledgeId);
    if (!col) return 0;
    const n = this.removeDoc(col, docsId);
    if (n > 0) this.markDirty(col);
    return n;
  }

  async stats(knowledgeId: string): Promise<CollectionStats | undefined> {
    const col = this.collections.get(knowledgeId);
    return col ? { documents: col.docs.size, chunks: col.chunks.size } : undefined;
  }

  private search(col: Collection, q: VectorQuery): VectorHit[] {
    if (col.chunks.size === 0 || q.limit <= 0) return [];
    if (q.vector.length !== col.info.dimensions) {
      throw new StoreError(
        `query has ${q.vector.length} dimensions, ${col.info.knowledgeId} has ${col.info.dimensions}`,
      );
    }
    const k = Math.min(q.limit, col.chunks.size);
    const matches = col.index.search(q.vector, k, 0);
    const hits: VectorHit[] = [];
    for (let i = 0; i < matches.keys.length; i++) {
      const record = col.chunks.get(matches.keys[i] as bigint);
      if (!record) continue;
      const score = cosineToScore(1 - (matches.distances[i] as number));
      if (score >= q.minScore) hits.push({ record, score });
    }
    return hits;
  }

  async query(q: VectorQuery): Promise<VectorHit[]> {
    const lists = q.knowledgeIds.flatMap((id) => {
      const col = this.collections.get(id);
      return col ? [this.search(col, q)] : [];
    });
    return mergeHits(lists, q.limit);
  }

  async queryBatch(qs: VectorQuery[]): Promise<VectorHit[][]> {
    return Promise.all(qs.map((q) => this.query(q)));
  }

  private markDirty(col: Collection): void {
    col.dirty = true;
    if (!this.opts.dataDir || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      try {
        this.flush();
      } catch (err) {
        this.opts.onError?.(err as Error);
      }
    }, this.opts.flushDelayMs ?? 500);
    this.timer.unref();
  }

  /** Writes every changed collection to disk now. */
  flush(): void {
    for (const col of this.collections.values()) {
      const dir = this.dirOf(col.info.knowledgeId);
      if (!dir || !col.dirty) continue;
      mkdirSync(dir, { recursive: true });
      const chunks: PersistedChunks = {
        nextKey: String(col.nextKey),
        chunks: [...col.chunks].map(([k, r]) => [String(k), r]),
      };
      if (col.chunks.size > 0) {
        col.index.save(join(dir, "index.usearch.tmp"));
        renameSync(join(dir, "index.usearch.tmp"), join(dir, "index.usearch"));
      }
      writeFileSync(join(dir, "chunks.json.tmp"), JSON.stringify(chunks));
      renameSync(join(dir, "chunks.json.tmp"), join(dir, "chunks.json"));
      writeFileSync(join(dir, "meta.json.tmp"), JSON.stringify(col.info));
      renameSync(join(dir, "meta.json.tmp"), join(dir, "meta.json"));
      col.dirty = false;
    }
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.opts.dataDir) this.flush();
  }
}
