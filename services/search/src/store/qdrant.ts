// The Qdrant adapter. Layout (Qdrant's multitenancy guidance, measured in docs/search.md): one
// collection per embedding model and size, `<prefix>_<model>_<dims>`, shared by every knowledge
// base of that model and partitioned by payload: knowledgeId is a keyword index with
// is_tenant=true (Qdrant co-locates each tenant's points) and HNSW is built per tenant
// (payload_m) instead of globally (m=0), since every query filters on knowledgeId. Collection
// settings (model, dimensions, chunking) live as points of `<prefix>_registry`.
// Scores: Qdrant's raw cosine goes through cosineToScore like the embedded store's, and
// minScore is inclusive: score_threshold is only a loose pre-filter (Qdrant's is strict), the
// exact `score >= minScore` test runs here.
import { createHash } from "node:crypto";
import type { OutboundMetrics } from "@capstan/shared";
import { QdrantCallError, QdrantHttp } from "./qdrant-http.ts";
import {
  type ChunkRecord,
  type ChunkWithVector,
  type CollectionInfo,
  type CollectionLayout,
  type CollectionStats,
  cosineFloorOf,
  cosineToScore,
  mergeHits,
  pointIdOf,
  StoreError,
  type VectorHit,
  type VectorQuery,
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
}

interface Condition {
  key?: string;
  match?: { value: string | number };
  has_id?: string[];
}
interface Filter {
  must: Condition[];
  must_not?: Condition[];
}
interface ScoredPoint {
  score: number;
  payload?: Record<string, unknown> | null;
}

/** Payload fields searches and document operations filter on; each gets a payload index. */
const PAYLOAD_INDEXES: { field: string; schema: unknown }[] = [
  { field: "knowledgeId", schema: { type: "keyword", is_tenant: true } },
  { field: "docsId", schema: "keyword" },
  { field: "chunkIndex", schema: "integer" },
];

function slug(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "");
}

function registryId(knowledgeId: string): string {
  return pointIdOf(`emb_${createHash("sha256").update(knowledgeId).digest("hex")}`);
}

const isMissing = (err: unknown) => err instanceof QdrantCallError && err.status === 404;

export class QdrantStore implements VectorStore {
  readonly kind = "qdrant" as const;
  private readonly http: QdrantHttp;
  private readonly opts: QdrantStoreOptions;
  private readonly prefix: string;
  /** Collections known to exist; forgotten on a 404 (deleted behind our back) and re-created. */
  private readonly ready = new Set<string>();
  /** Registry entries, cached briefly: every query needs them and they rarely change. */
  private readonly infos = new Map<string, { info: CollectionInfo | undefined; at: number }>();

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
  }

  get registry(): string {
    return `${this.prefix}_registry`;
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

  /** Creates a collection; another replica creating it first (409) is fine. */
  private async create(name: string, body: unknown): Promise<void> {
    try {
      await this.http.call("create", "PUT", `collections/${name}`, body);
    } catch (err) {
      const exists = await this.exists(name);
      if (!exists) throw err;
    }
  }

  private async exists(name: string): Promise<boolean> {
    const r = await this.http.call<{ exists: boolean }>("exists", "GET", `collections/${name}/exists`);
    return r.exists;
  }

  private async ensureRegistry(): Promise<void> {
    if (this.ready.has(this.registry)) return;
    if (!(await this.exists(this.registry))) {
      await this.create(this.registry, { vectors: { size: 1, distance: "Dot" } });
    }
    this.ready.add(this.registry);
  }

  private async ensureData(info: CollectionInfo): Promise<string> {
    const l = this.layout(info);
    if (this.ready.has(l.collection)) return l.collection;
    if (!(await this.exists(l.collection))) {
      await this.create(l.collection, {
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

  /** The same for the registry collection. */
  private async onRegistry<T>(fn: () => Promise<T>): Promise<T> {
    await this.ensureRegistry();
    try {
      return await fn();
    } catch (err) {
      if (!isMissing(err)) throw err;
      this.ready.delete(this.registry);
      await this.ensureRegistry();
      return fn();
    }
  }

  async getCollection(knowledgeId: string): Promise<CollectionInfo | undefined> {
    const cached = this.infos.get(knowledgeId);
    if (cached && Date.now() - cached.at < (this.opts.infoTtlMs ?? 5000))
      return cached.info ? { ...cached.info } : undefined;
    const points = await this.onRegistry(() =>
      this.http.call<{ payload?: unknown }[]>("retrieve", "POST", `collections/${this.registry}/points`, {
        ids: [registryId(knowledgeId)],
        with_payload: true,
      }),
    );
    const payload = points[0]?.payload as CollectionInfo | undefined;
    this.infos.set(knowledgeId, { info: payload, at: Date.now() });
    return payload ? { ...payload } : undefined;
  }

  async ensureCollection(info: CollectionInfo): Promise<void> {
    this.infos.delete(info.knowledgeId);
    const existing = await this.getCollection(info.knowledgeId);
    if (existing && (existing.model !== info.model || existing.dimensions !== info.dimensions)) {
      await this.deletePoints(this.collectionName(existing), this.kbFilter(info.knowledgeId));
    }
    await this.ensureData(info);
    await this.onRegistry(() =>
      this.http.call("upsert", "PUT", `collections/${this.registry}/points?wait=true`, {
        points: [{ id: registryId(info.knowledgeId), vector: [1], payload: { ...info } }],
      }),
    );
    this.infos.delete(info.knowledgeId);
  }

  private kbFilter(knowledgeId: string, docsId?: string): Filter {
    const must: Condition[] = [{ key: "knowledgeId", match: { value: knowledgeId } }];
    if (docsId !== undefined) must.push({ key: "docsId", match: { value: docsId } });
    return { must };
  }

  private async deletePoints(collection: string, filter: Filter): Promise<void> {
    try {
      await this.http.call("delete", "POST", `collections/${collection}/points/delete?wait=true`, { filter });
    } catch (err) {
      if (!isMissing(err)) throw err; // no collection: nothing to delete
    }
  }

  async dropCollection(knowledgeId: string): Promise<boolean> {
    this.infos.delete(knowledgeId);
    const info = await this.getCollection(knowledgeId);
    if (!info) return false;
    await this.deletePoints(this.collectionName(info), this.kbFilter(knowledgeId));
    await this.onRegistry(() =>
      this.http.call("delete", "POST", `collections/${this.registry}/points/delete?wait=true`, {
        points: [registryId(knowledgeId)],
      }),
    );
    this.infos.delete(knowledgeId);
    return true;
  }

  private async require(knowledgeId: string): Promise<CollectionInfo> {
    const info = await this.getCollection(knowledgeId);
    if (!info) throw new StoreError(`no collection for knowledge base ${knowledgeId}`);
    return info;
  }

  async replaceDocument(knowledgeId: string, docsId: string, chunks: ChunkWithVector[]): Promise<void> {
    const info = await this.require(knowledgeId);
    for (const c of chunks) {
      if (c.vector.length !== info.dimensions) {
        throw new StoreError(`vector has ${c.vector.length} dimensions, collection has ${info.dimensions}`);
      }
    }
    const ids = chunks.map((c) => pointIdOf(c.record.embeddingId));
    const size = this.opts.upsertBatch ?? 256;
    await this.onData(info, async (name) => {
      for (let i = 0; i < chunks.length; i += size) {
        const points = chunks.slice(i, i + size).map((c, j) => ({
          id: ids[i + j] as string,
          vector: Array.from(c.vector),
          payload: { ...c.record, knowledgeId, docsId },
        }));
        await this.http.call("upsert", "PUT", `collections/${name}/points?wait=true`, { points });
      }
      // Then remove what the new version no longer has: no window where the document is missing.
      const filter = this.kbFilter(knowledgeId, docsId);
      if (ids.length > 0) filter.must_not = [{ has_id: ids }];
      await this.http.call("delete", "POST", `collections/${name}/points/delete?wait=true`, { filter });
    });
  }

  private count(name: string, filter: Filter): Promise<number> {
    return this.http
      .call<{ count: number }>("count", "POST", `collections/${name}/points/count`, { filter, exact: true })
      .then((r) => r.count);
  }

  async deleteDocument(knowledgeId: string, docsId: string): Promise<number> {
    const info = await this.getCollection(knowledgeId);
    if (!info) return 0;
    const filter = this.kbFilter(knowledgeId, docsId);
    return this.onData(info, async (name) => {
      const n = await this.count(name, filter);
      if (n > 0) await this.http.call("delete", "POST", `collections/${name}/points/delete?wait=true`, { filter });
      return n;
    });
  }

  async stats(knowledgeId: string): Promise<CollectionStats | undefined> {
    const info = await this.getCollection(knowledgeId);
    if (!info) return undefined;
    const all = this.kbFilter(knowledgeId);
    const firsts: Filter = { must: [...all.must, { key: "chunkIndex", match: { value: 0 } }] };
    const [chunks, documents] = await this.onData(info, (name) =>
      Promise.all([this.count(name, all), this.count(name, firsts)]),
    );
    return { documents, chunks };
  }

  /** One search of one tenant: its filter hits the per-tenant HNSW graph (payload_m). */
  private request(q: VectorQuery, knowledgeId: string) {
    return {
      query: Array.from(q.vector),
      filter: { must: [{ key: "knowledgeId", match: { value: knowledgeId } }] },
      limit: q.limit,
      // Strict and float32 on the server: pass a floor below the inclusive minimum (see toHits).
      score_threshold: cosineFloorOf(q.minScore),
      with_payload: true,
      params: { hnsw_ef: Math.max(this.opts.searchEf ?? 128, q.limit) },
    };
  }

  private toHits(points: ScoredPoint[], minScore: number): VectorHit[] {
    return points
      .filter((p) => p.payload)
      .map((p) => ({ record: p.payload as unknown as ChunkRecord, score: cosineToScore(p.score) }))
      .filter((h) => h.score >= minScore);
  }

  async query(q: VectorQuery): Promise<VectorHit[]> {
    const [hits] = await this.queryBatch([q]);
    return hits ?? [];
  }

  async queryBatch(qs: VectorQuery[]): Promise<VectorHit[][]> {
    // One batch request per physical collection, holding one search per (query, knowledge base).
    const infos = new Map<string, CollectionInfo | undefined>();
    for (const id of new Set(qs.flatMap((q) => q.knowledgeIds))) infos.set(id, await this.getCollection(id));
    const byCollection = new Map<string, { owner: number; q: VectorQuery; knowledgeId: string }[]>();
    for (const [owner, q] of qs.entries()) {
      if (q.limit <= 0) continue;
      for (const knowledgeId of new Set(q.knowledgeIds)) {
        const info = infos.get(knowledgeId);
        if (!info) continue;
        const name = this.collectionName(info);
        byCollection.set(name, [...(byCollection.get(name) ?? []), { owner, q, knowledgeId }]);
      }
    }
    const lists: VectorHit[][][] = qs.map(() => []);
    await Promise.all(
      [...byCollection].map(async ([name, items]) => {
        let res: { points: ScoredPoint[] }[];
        try {
          res = await this.http.call("query", "POST", `collections/${name}/points/query/batch`, {
            searches: items.map((it) => this.request(it.q, it.knowledgeId)),
          });
        } catch (err) {
          if (!isMissing(err)) throw err;
          // Deleted behind our back: nothing to find; the next write re-creates it.
          this.ready.delete(name);
          return;
        }
        res.forEach((r, k) => {
          const it = items[k];
          if (it) lists[it.owner]?.push(this.toHits(r.points, it.q.minScore));
        });
      }),
    );
    return lists.map((l, i) => mergeHits(l, qs[i]?.limit ?? 0));
  }

  async close(): Promise<void> {
    this.http.close();
  }
}
