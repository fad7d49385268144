// The embedded vector store: one HNSW index (usearch, cosine) per vector set of a knowledge base,
// chunk payloads in memory, persisted to <dataDir>/collections/<knowledgeId>/ (the serving
// vector set) and <dataDir>/building/<knowledgeId>/ (a vector set being built after a model
// change), each with index.usearch, chunks.json and meta.json, by a debounced flush (write to a
// temporary file, then rename) and on close. Without a dataDir it keeps everything in memory.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type Collection,
  chunksOf,
  type EmbeddedStoreOptions,
  type Entry,
  emptyCollection,
  type PersistedChunks,
  type Place,
  pageOf,
  prunableDocs,
  stampDoc,
  track,
} from "./embedded-collection.ts";
import {
  type ChunkRecord,
  type ChunkWithVector,
  type CollectionInfo,
  type CollectionLayout,
  type CollectionStats,
  cosineToScore,
  DEFAULT_RETIRE_GRACE_MS,
  type DocumentPage,
  type DocumentSummary,
  type IngestStamps,
  mergeHits,
  type PruneRule,
  StoreError,
  sameModel,
  type VectorHit,
  type VectorQuery,
  type VectorSetName,
  type VectorSets,
  type VectorStore,
} from "./types.ts";

export type { EmbeddedStoreOptions } from "./embedded-collection.ts";

export class EmbeddedStore implements VectorStore {
  readonly kind = "embedded" as const;
  private readonly entries = new Map<string, Entry>();
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

  private dirOf(place: Place, key: string): string | undefined {
    return this.opts.dataDir && place !== "retired" ? join(this.opts.dataDir, place, key) : undefined;
  }

  private loadAll(dataDir: string): void {
    for (const place of ["collections", "building"] as const) {
      const root = join(dataDir, place);
      mkdirSync(root, { recursive: true });
      for (const name of readdirSync(root)) {
        const col = this.load(join(root, name), place, name);
        if (!col) continue;
        const entry = this.entries.get(col.info.knowledgeId);
        if (place === "collections") this.entries.set(col.info.knowledgeId, { serving: col });
        else if (entry) entry.building = col;
        else {
          // Stopped half-way through a switch (the old folder removed, the new one not yet
          // renamed): the built vector set is the one that was being promoted.
          renameSync(join(root, name), join(dataDir, "collections", name));
          this.entries.set(col.info.knowledgeId, { serving: { ...col, place: "collections" } });
        }
      }
    }
  }

  private load(dir: string, place: Place, name: string): Collection | undefined {
    try {
      const info = JSON.parse(readFileSync(join(dir, "meta.json"), "utf8")) as CollectionInfo;
      const col = emptyCollection(this.opts, info, place);
      if (existsSync(join(dir, "chunks.json"))) {
        const saved = JSON.parse(readFileSync(join(dir, "chunks.json"), "utf8")) as PersistedChunks;
        col.nextKey = BigInt(saved.nextKey);
        for (const [key, record] of saved.chunks) track(col, BigInt(key), record);
        if (col.chunks.size > 0) col.index.load(join(dir, "index.usearch"));
      }
      col.dirty = false;
      return col;
    } catch (err) {
      this.opts.onError?.(new StoreError(`cannot load ${place} ${name}: ${(err as Error).message}`));
      return undefined;
    }
  }

  /** Forgets a vector set and its folder. */
  private discard(col: Collection | undefined): void {
    if (!col) return;
    const dir = this.dirOf(col.place, col.info.knowledgeId);
    col.place = "retired";
    if (dir) rmSync(dir, { recursive: true, force: true });
  }

  private expireRetired(e: Entry): void {
    clearTimeout(e.retireTimer);
    e.retireTimer = undefined;
    e.retired = undefined;
  }

  async ensureCollection(info: CollectionInfo): Promise<void> {
    const e = this.entries.get(info.knowledgeId);
    if (!e) {
      const col = emptyCollection(this.opts, info, "collections");
      this.entries.set(info.knowledgeId, { serving: col });
      this.markDirty(col);
      return;
    }
    if (sameModel(e.serving.info, info)) {
      // Back to the serving model: a build in progress is abandoned.
      this.discard(e.building);
      e.building = undefined;
      this.updateChunking(e.serving, info);
      return;
    }
    if (e.building && sameModel(e.building.info, info)) {
      this.updateChunking(e.building, info);
      return;
    }
    this.discard(e.building);
    e.building = emptyCollection(this.opts, info, "building");
    this.markDirty(e.building);
  }

  private updateChunking(col: Collection, info: CollectionInfo): void {
    const c = col.info.chunking;
    if (c.size === info.chunking.size && c.overlap === info.chunking.overlap) return;
    col.info = { ...info };
    this.markDirty(col);
  }

  async getCollection(key: string): Promise<CollectionInfo | undefined> {
    const info = this.entries.get(key)?.serving.info;
    return info ? { ...info } : undefined;
  }

  async vectorSets(key: string): Promise<VectorSets | undefined> {
    const e = this.entries.get(key);
    if (!e) return undefined;
    return { serving: { ...e.serving.info }, ...(e.building ? { building: { ...e.building.info } } : {}) };
  }

  async switchVectorSet(key: string, model?: string): Promise<CollectionInfo | undefined> {
    const e = this.entries.get(key);
    const next = e?.building;
    if (!e || !next || (model !== undefined && next.info.model !== model)) return undefined;
    this.expireRetired(e);
    const old = e.serving;
    const from = this.dirOf("building", key);
    this.discard(old); // removes the serving folder; the built one is renamed in its place
    e.serving = next;
    e.building = undefined;
    next.place = "collections";
    const to = this.dirOf("collections", key);
    if (from && to && existsSync(from)) renameSync(from, to);
    this.markDirty(next);
    e.retired = old;
    e.retireTimer = setTimeout(() => {
      if (e.retired === old) this.expireRetired(e);
    }, this.opts.retireGraceMs ?? DEFAULT_RETIRE_GRACE_MS);
    e.retireTimer.unref();
    return { ...next.info };
  }

  async dropCollection(key: string): Promise<boolean> {
    const e = this.entries.get(key);
    this.entries.delete(key);
    if (e) this.expireRetired(e);
    for (const place of ["collections", "building"] as const) {
      const dir = this.dirOf(place, key);
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
    return e !== undefined;
  }

  async renameCollection(from: string, to: string): Promise<boolean> {
    const e = this.entries.get(from);
    if (!e || this.entries.has(to)) return false;
    this.entries.delete(from);
    this.entries.set(to, e);
    for (const col of [e.serving, e.building, e.retired]) {
      if (!col) continue;
      const dir = this.dirOf(col.place, from);
      col.info = { ...col.info, knowledgeId: to };
      for (const record of col.chunks.values()) record.knowledgeId = to;
      const next = this.dirOf(col.place, to);
      if (dir && next && existsSync(dir)) renameSync(dir, next);
      if (col.place !== "retired") this.markDirty(col);
    }
    return true;
  }

  async replaceDocument(key: string, docsId: string, chunks: ChunkWithVector[]): Promise<void> {
    const e = this.entries.get(key);
    if (!e) throw new StoreError(`no collection for knowledge base ${key}`);
    const col = e.building ?? e.serving;
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
        const slot = col.nextKey++;
        keys[i] = slot;
        matrix.set(c.vector, i * col.info.dimensions);
        track(col, slot, { ...c.record, knowledgeId: key, docsId });
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

  async deleteDocument(key: string, docsId: string): Promise<number> {
    const e = this.entries.get(key);
    let n = 0;
    for (const col of e ? [e.serving, e.building] : []) {
      const removed = col ? this.removeDoc(col, docsId) : 0;
      if (col && removed > 0) this.markDirty(col);
      n += removed;
    }
    return n;
  }

  /** The vector set written to: the one being built, else the serving one. */
  private writable = (key: string) => this.entries.get(key)?.building ?? this.entries.get(key)?.serving;

  async stampDocument(key: string, docsId: string, stamps: IngestStamps): Promise<void> {
    const col = this.writable(key);
    if (col && stampDoc(col, docsId, stamps)) this.markDirty(col);
  }

  async pruneDocuments(key: string, rule: PruneRule): Promise<number> {
    const col = this.writable(key);
    if (!col) return 0;
    const gone = prunableDocs(col, rule);
    for (const id of gone) this.removeDoc(col, id);
    if (gone.length > 0) this.markDirty(col);
    return gone.length;
  }

  async ingestedPage(key: string, source: string | undefined, from: string | undefined, limit: number) {
    return pageOf(this.writable(key), "", from, limit, source);
  }

  async documents(key: string, docsIdPrefix: string): Promise<DocumentSummary[]> {
    const page = pageOf(this.vectorSet(key, "serving"), docsIdPrefix, undefined, Number.MAX_SAFE_INTEGER);
    return page.documents.map(({ at: _at, ...doc }) => doc).sort((a, b) => a.docsId.localeCompare(b.docsId));
  }

  async documentPage(
    key: string,
    set: VectorSetName,
    docsIdPrefix: string,
    from: string | undefined,
    scan: number,
  ): Promise<DocumentPage> {
    return pageOf(this.vectorSet(key, set), docsIdPrefix, from, scan);
  }

  async documentChunks(key: string, docsId: string, set: VectorSetName): Promise<ChunkRecord[]> {
    return chunksOf(this.vectorSet(key, set), docsId);
  }

  private vectorSet(key: string, set: VectorSetName): Collection | undefined {
    const e = this.entries.get(key);
    return set === "building" ? e?.building : e?.serving;
  }

  async stats(key: string, set: VectorSetName = "serving"): Promise<CollectionStats | undefined> {
    const col = this.vectorSet(key, set);
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

  /** The vector set a query reads: the one of its model (serving, or retired in its grace period). */
  private readable(e: Entry, model: string | undefined): Collection | undefined {
    if (model === undefined) return e.serving;
    return [e.serving, e.retired].find((c) => c?.info.model === model);
  }

  async query(q: VectorQuery): Promise<VectorHit[]> {
    const lists = q.keys.flatMap((key) => {
      const e = this.entries.get(key);
      const col = e && this.readable(e, q.model);
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

  /** Writes every changed vector set to disk now. */
  flush(): void {
    for (const e of this.entries.values()) {
      for (const col of [e.serving, e.building]) if (col) this.write(col);
    }
  }

  private write(col: Collection): void {
    const dir = this.dirOf(col.place, col.info.knowledgeId);
    if (!dir || !col.dirty) return;
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

  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const e of this.entries.values()) this.expireRetired(e);
    if (this.opts.dataDir) this.flush();
  }
}
