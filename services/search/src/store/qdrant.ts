// The Qdrant adapter. Layout (Qdrant's multitenancy guidance, measured in docs/search.md): one
// collection per embedding model and size, `<prefix>_<model>_<dims>`, shared by every knowledge
// base of that model and partitioned by payload: knowledgeId is a keyword index with
// is_tenant=true (Qdrant co-locates each tenant's points) and HNSW is built per tenant
// (payload_m) instead of globally (m=0), since every query filters on knowledgeId. Each
// knowledge base's vector sets (serving, building, retired) live as one point of
// `<prefix>_registry` (qdrant-registry.ts): a model change fills the new model's collection
// beside the old one, and the switch is one atomic registry upsert.
// Searches and scores: qdrant-query.ts. On a Qdrant cluster, collections are created sharded and
// replicated (qdrant-cluster.ts) and the shards' state is read in the background for /readyz.
import type { OutboundMetrics } from "@capstan/shared";
import { type ClusterLayoutConfig, QdrantCluster } from "./qdrant-cluster.ts";
import {
  countPoints,
  deleteDocumentPoints,
  documentChunks,
  listDocuments,
  pageDocuments,
  prunePoints,
  stampPoints,
  writePoints,
} from "./qdrant-documents.ts";
import { QdrantHttp } from "./qdrant-http.ts";
import { type Filter, kbFilter, PAYLOAD_INDEXES, slug } from "./qdrant-payload.ts";
import { groupByCollection, type ScoredPoint, tenantSearch, toHits } from "./qdrant-query.ts";
import { isMissing, QdrantRegistry, type RegistryEntry, settingsOf } from "./qdrant-registry.ts";
import {
  type ChunkRecord,
  type ChunkWithVector,
  type CollectionInfo,
  type CollectionLayout,
  type CollectionStats,
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

export interface QdrantStoreOptions {
  url: string;
  apiKey?: string | undefined;
  /** PEM CA bundle for an https URL signed by a private CA. */
  ca?: string | undefined;
  collectionPrefix?: string;
  timeoutMs?: number;
  maxRetries?: number;
  hnsw?: { m: number; efConstruct: number };
  searchEf?: number;
  metrics?: OutboundMetrics;
  upsertBatch?: number;
  /** How long a knowledge base's registry entry is cached (another replica may change it). */
  infoTtlMs?: number;
  /** How long a replaced vector set still answers searches that name its model (> the caches' TTL). */
  retireGraceMs?: number;
  /** Shards, replicas and write consistency of new collections on a cluster (absent: from the peers). */
  collection?: ClusterLayoutConfig;
  /** How often the shards' state is read for status (0: never). */
  clusterStatusMs?: number;
}

export class QdrantStore implements VectorStore {
  readonly kind = "qdrant" as const;
  private readonly http: QdrantHttp;
  private readonly opts: QdrantStoreOptions;
  private readonly prefix: string;
  private readonly reg: QdrantRegistry;
  /** Collections known to exist; forgotten on a 404 (deleted behind our back) and re-created. */
  private readonly ready = new Set<string>();
  /** Pending deletions of retired vector sets, by knowledge base. */
  private readonly retireTimers = new Map<string, NodeJS.Timeout>();
  /** Collection creation and shard state on a Qdrant cluster. */
  readonly cluster: QdrantCluster;

  constructor(opts: QdrantStoreOptions) {
    this.opts = opts;
    this.prefix = opts.collectionPrefix ?? "capstan_chunks";
    this.http = new QdrantHttp({
      url: opts.url,
      apiKey: opts.apiKey,
      ca: opts.ca,
      timeoutMs: opts.timeoutMs ?? 10_000,
      maxRetries: opts.maxRetries ?? 2,
      metrics: opts.metrics,
    });
    this.cluster = new QdrantCluster(this.http, opts.collection, {
      prefix: this.prefix,
      everyMs: opts.clusterStatusMs,
    });
    this.reg = new QdrantRegistry(this.http, this.prefix, opts.infoTtlMs ?? 5000, this.cluster);
  }

  get registry(): string {
    return this.reg.name;
  }

  collectionName(info: Pick<CollectionInfo, "model" | "dimensions">): string {
    return `${this.prefix}_${slug(info.model)}_${info.dimensions}`;
  }

  layout(info: CollectionInfo): CollectionLayout {
    const hnsw = this.opts.hnsw ?? { m: 16, efConstruct: 128 };
    return {
      backend: "qdrant",
      collection: this.collectionName(info),
      tenant: info.knowledgeId,
      vectorSize: info.dimensions,
      distance: "Cosine",
      hnsw: { m: 0, payloadM: hnsw.m, efConstruct: hnsw.efConstruct, efSearch: this.opts.searchEf ?? 128 },
    };
  }

  private async ensureData(info: CollectionInfo): Promise<string> {
    const l = this.layout(info);
    if (this.ready.has(l.collection)) return l.collection;
    if (!(await this.cluster.exists(l.collection))) {
      await this.cluster.create(l.collection, "data", {
        vectors: { size: l.vectorSize, distance: l.distance },
        hnsw_config: { m: l.hnsw.m, payload_m: l.hnsw.payloadM as number, ef_construct: l.hnsw.efConstruct },
      });
    }
    // Idempotent: also repairs a collection created by another replica that died half-way.
    for (const { field, schema } of PAYLOAD_INDEXES) {
      await this.http.call("index", "PUT", `collections/${l.collection}/index?wait=true`, {
        field_name: field,
        field_schema: schema,
      });
    }
    this.ready.add(l.collection);
    return l.collection;
  }

  /** Runs fn on a data collection; when it was deleted behind our back, re-creates it and retries once. */
  private async onData<T>(info: CollectionInfo, fn: (name: string) => Promise<T>): Promise<T> {
    const name = await this.ensureData(info);
    try {
      return await fn(name);
    } catch (err) {
      if (!isMissing(err)) throw err;
      this.ready.delete(name);
      return fn(await this.ensureData(info));
    }
  }

  async getCollection(key: string): Promise<CollectionInfo | undefined> {
    const e = await this.reg.get(key);
    return e ? settingsOf(e) : undefined;
  }

  async vectorSets(key: string): Promise<VectorSets | undefined> {
    const e = await this.reg.get(key);
    if (!e) return undefined;
    return { serving: settingsOf(e), ...(e.building ? { building: settingsOf(e.building) } : {}) };
  }

  /** Deletes a vector set's points (its tenant in its model's collection). */
  private dropVectorSet(g: CollectionInfo): Promise<void> {
    return this.deletePoints(this.collectionName(g), kbFilter(g.knowledgeId));
  }

  async ensureCollection(info: CollectionInfo): Promise<void> {
    const e = await this.reg.get(info.knowledgeId, true);
    if (!e) {
      await this.ensureData(info);
      await this.reg.put({ ...info });
      return;
    }
    const serving = settingsOf(e);
    const keep = { retired: e.retired, retiredAt: e.retiredAt };
    const grace = this.opts.retireGraceMs ?? DEFAULT_RETIRE_GRACE_MS;
    if (e.retired && Date.now() - (e.retiredAt ?? 0) >= grace) {
      // Its deletion after the switch did not happen (the process stopped): do it now.
      await this.dropVectorSet(e.retired);
      keep.retired = undefined;
      keep.retiredAt = undefined;
    }
    if (sameModel(serving, info)) {
      // Back to the serving model: a build in progress is abandoned.
      if (e.building) await this.dropVectorSet(e.building);
      await this.ensureData(info);
      await this.reg.put({ ...info, ...keep });
      return;
    }
    if (e.building && sameModel(e.building, info)) {
      await this.ensureData(info);
      await this.reg.put({ ...serving, building: { ...info }, ...keep });
      return;
    }
    if (e.building) await this.dropVectorSet(e.building);
    if (e.retired && sameModel(e.retired, info)) {
      // The new build goes where the retired vector set still is: it must not count or keep those.
      await this.dropVectorSet(e.retired);
      keep.retired = undefined;
      keep.retiredAt = undefined;
    }
    await this.ensureData(info);
    await this.dropVectorSet(info); // leftovers of a build abandoned by a crash: start clean
    await this.reg.put({ ...serving, building: { ...info }, ...keep });
  }

  async switchVectorSet(key: string, model?: string): Promise<CollectionInfo | undefined> {
    const e = await this.reg.get(key, true);
    const next = e?.building;
    if (!e || !next || (model !== undefined && next.model !== model)) return undefined;
    if (e.retired) await this.dropVectorSet(e.retired);
    // The switch itself: one upsert of the registry point.
    await this.reg.put({ ...settingsOf(next), retired: settingsOf(e), retiredAt: Date.now() });
    this.scheduleRetire(key, this.opts.retireGraceMs ?? DEFAULT_RETIRE_GRACE_MS);
    return settingsOf(next);
  }

  private scheduleRetire(key: string, delayMs: number): void {
    clearTimeout(this.retireTimers.get(key));
    const timer = setTimeout(() => {
      this.retireTimers.delete(key);
      // A failure leaves the entry as it is: the next ensure or switch deletes the vector set.
      this.purgeRetired(key).catch(() => {});
    }, delayMs);
    timer.unref();
    this.retireTimers.set(key, timer);
  }

  /** Deletes the retired vector set once its grace period is over. */
  private async purgeRetired(key: string): Promise<void> {
    const e = await this.reg.get(key, true);
    if (!e?.retired) return;
    const grace = this.opts.retireGraceMs ?? DEFAULT_RETIRE_GRACE_MS;
    const left = (e.retiredAt ?? 0) + grace - Date.now();
    if (left > 0) return this.scheduleRetire(key, left);
    await this.dropVectorSet(e.retired);
    await this.reg.put({ ...e, retired: undefined, retiredAt: undefined });
  }

  private async deletePoints(collection: string, filter: Filter): Promise<void> {
    try {
      await this.http.call("delete", "POST", `collections/${collection}/points/delete?wait=true`, { filter });
    } catch (err) {
      if (!isMissing(err)) throw err; // no collection: nothing to delete
    }
  }

  async dropCollection(key: string): Promise<boolean> {
    const e = await this.reg.get(key, true);
    if (!e) return false;
    clearTimeout(this.retireTimers.get(key));
    this.retireTimers.delete(key);
    for (const g of [e, e.building, e.retired]) if (g) await this.dropVectorSet(g);
    await this.reg.remove(key);
    return true;
  }

  async renameCollection(from: string, to: string): Promise<boolean> {
    const e = await this.reg.get(from, true);
    if (!e || (await this.reg.get(to, true))) return false;
    const sets = [settingsOf(e), e.building, e.retired].filter((g): g is CollectionInfo => g !== undefined);
    // Re-tag the points (their ids stay; a later write of a document replaces them by docsId).
    for (const g of sets) {
      await this.onData(g, (name) =>
        this.http.call("set_payload", "POST", `collections/${name}/points/payload?wait=true`, {
          payload: { knowledgeId: to },
          filter: kbFilter(from),
        }),
      );
    }
    const moved = (g: CollectionInfo | undefined) => g && { ...g, knowledgeId: to };
    await this.reg.put({ ...e, knowledgeId: to, building: moved(e.building), retired: moved(e.retired) });
    await this.reg.remove(from);
    return true;
  }

  /** Where document writes go: the building vector set when there is one, else the serving one. */
  private async writable(key: string): Promise<CollectionInfo> {
    const e = await this.reg.get(key);
    if (!e) throw new StoreError(`no collection for knowledge base ${key}`);
    return settingsOf(e.building ?? e);
  }

  async replaceDocument(key: string, docsId: string, chunks: ChunkWithVector[]): Promise<void> {
    const info = await this.writable(key);
    for (const c of chunks) {
      if (c.vector.length !== info.dimensions) {
        throw new StoreError(`vector has ${c.vector.length} dimensions, collection has ${info.dimensions}`);
      }
    }
    const size = this.opts.upsertBatch ?? 256;
    await this.onData(info, (name) => writePoints(this.http, name, key, docsId, chunks, size));
  }

  async deleteDocument(key: string, docsId: string): Promise<number> {
    const e = await this.reg.get(key);
    if (!e) return 0;
    let n = 0;
    for (const g of [settingsOf(e), e.building]) {
      if (!g) continue;
      n += await this.onData(g, (name) => deleteDocumentPoints(this.http, name, key, docsId));
    }
    return n;
  }

  async documents(key: string, prefix: string): Promise<DocumentSummary[]> {
    return this.onVectorSet(key, "serving", [], (c) => listDocuments(this.http, c, key, prefix));
  }

  async documentPage(id: string, g: VectorSetName, prefix: string, from?: string, scan = 256): Promise<DocumentPage> {
    return this.onVectorSet(id, g, { documents: [] }, (c) => pageDocuments(this.http, c, id, prefix, from, scan));
  }

  async documentChunks(key: string, docsId: string, g: VectorSetName): Promise<ChunkRecord[]> {
    return this.onVectorSet(key, g, [], (c) => documentChunks(this.http, c, key, docsId));
  }

  async stampDocument(id: string, docsId: string, stamps: Pick<IngestStamps, "refresh" | "fetchedAt">) {
    await this.onVectorSet(id, "writable", undefined, (c) => stampPoints(this.http, c, id, docsId, stamps));
  }

  async pruneDocuments(id: string, rule: PruneRule): Promise<number> {
    return this.onVectorSet(id, "writable", 0, (c) => prunePoints(this.http, c, id, rule));
  }

  async ingestedPage(id: string, source: string | undefined, from: string | undefined, limit: number) {
    const none: DocumentPage = { documents: [] };
    return this.onVectorSet(id, "writable", none, (c) => pageDocuments(this.http, c, id, "", from, limit, source));
  }

  /** Runs fn on one vector set's collection (writable: building, else serving); `none` when there is none. */
  private async onVectorSet<T>(
    id: string,
    g: VectorSetName | "writable",
    none: T,
    fn: (c: string) => Promise<T>,
  ): Promise<T> {
    const e = await this.reg.get(id);
    const info = g === "building" || (g === "writable" && e?.building) ? e?.building : e && settingsOf(e);
    return info ? this.onData(info, fn) : none;
  }

  async stats(key: string, set: VectorSetName = "serving"): Promise<CollectionStats | undefined> {
    const all = kbFilter(key);
    const firsts: Filter = { must: [...all.must, { key: "chunkIndex", match: { value: 0 } }] };
    return this.onVectorSet(key, set, undefined, async (name) => {
      const [chunks, documents] = await Promise.all([
        countPoints(this.http, name, all),
        countPoints(this.http, name, firsts),
      ]);
      return { documents, chunks };
    });
  }

  async query(q: VectorQuery): Promise<VectorHit[]> {
    const [hits] = await this.queryBatch([q]);
    return hits ?? [];
  }

  async queryBatch(qs: VectorQuery[]): Promise<VectorHit[][]> {
    // One batch request per physical collection, holding one search per (query, knowledge base).
    const entries = new Map<string, RegistryEntry | undefined>();
    for (const key of new Set(qs.flatMap((q) => q.keys))) entries.set(key, await this.reg.get(key));
    const byCollection = groupByCollection(qs, entries, (info) => this.collectionName(info));
    const lists: VectorHit[][][] = qs.map(() => []);
    await Promise.all(
      [...byCollection].map(async ([name, items]) => {
        let res: { points: ScoredPoint[] }[];
        try {
          res = await this.http.call("query", "POST", `collections/${name}/points/query/batch`, {
            searches: items.map((it) => tenantSearch(it.q, it.key, this.opts.searchEf ?? 128)),
          });
        } catch (err) {
          if (!isMissing(err)) throw err;
          // Deleted behind our back: nothing to find; the next write re-creates it.
          this.ready.delete(name);
          return;
        }
        res.forEach((r, k) => {
          const it = items[k];
          if (it) lists[it.owner]?.push(toHits(r.points, it.q.minScore));
        });
      }),
    );
    return lists.map((l, i) => mergeHits(l, qs[i]?.limit ?? 0));
  }

  async close(): Promise<void> {
    this.cluster.close();
    for (const t of this.retireTimers.values()) clearTimeout(t);
    this.retireTimers.clear();
    this.http.close();
  }
}
