// The Qdrant adapter. Layout (Qdrant's multitenancy guidance): one collection per embedding model
// and size, `<prefix>_<model>_<dims>`, partitioned by payload: knowledgeId is a keyword index with
// is_tenant=true (Qdrant co-locates each tenant's points) and HNSW is built per tenant
// (payload_m) instead of globally (m=0), since every query filters on knowledgeId. Collection
// settings (model, dimensions, chunking) live as points of `<prefix>_registry`. Cosine scores
// are mapped to 0..1 with cosineToScore, and minScore becomes score_threshold on raw cosine.
import { createHash } from "node:crypto";
import type { OutboundMetrics } from "@capstan/shared";
import { QdrantClient, type Schemas } from "@qdrant/js-client-rest";
import {
  type ChunkRecord,
  type ChunkWithVector,
  type CollectionInfo,
  type CollectionStats,
  cosineToScore,
  mergeHits,
  pointIdOf,
  StoreError,
  scoreToCosine,
  type VectorHit,
  type VectorQuery,
  type VectorStore,
} from "./types.ts";

export interface QdrantStoreOptions {
  url: string;
  apiKey?: string | undefined;
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

type Filter = Schemas["Filter"];
type Condition = Schemas["Condition"];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function slug(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "");
}

function registryId(knowledgeId: string): string {
  return pointIdOf(`emb_${createHash("sha256").update(knowledgeId).digest("hex")}`);
}

function status(err: unknown): number | undefined {
  const s = (err as { status?: unknown })?.status;
  return typeof s === "number" ? s : undefined;
}

export class QdrantStore implements VectorStore {
  readonly kind = "qdrant" as const;
  private readonly client: QdrantClient;
  private readonly opts: QdrantStoreOptions;
  private readonly prefix: string;
  private readonly ready = new Set<string>();
  /** Registry entries, cached briefly: every query needs them and they rarely change. */
  private readonly infos = new Map<string, { info: CollectionInfo | undefined; at: number }>();

  constructor(opts: QdrantStoreOptions) {
    this.opts = opts;
    this.prefix = opts.collectionPrefix ?? "capstan_chunks";
    this.client = new QdrantClient({
      url: opts.url,
      ...(opts.apiKey ? { apiKey: opts.apiKey } : {}),
      timeout: opts.timeoutMs ?? 10_000,
      checkCompatibility: false,
    });
  }

  private get registry(): string {
    return `${this.prefix}_registry`;
  }

  collectionName(info: Pick<CollectionInfo, "model" | "dimensions">): string {
    return `${this.prefix}_${slug(info.model)}_${info.dimensions}`;
  }

  /** Every call: timeout (client), bounded retries on 5xx/429/network errors, metrics. */
  private async call<T>(op: string, fn: () => Promise<T>): Promise<T> {
    const retries = this.opts.maxRetries ?? 2;
    const m = this.opts.metrics;
    for (let attempt = 0; ; attempt++) {
      const started = performance.now();
      try {
        const out = await fn();
        m?.latency.observe({ target: `qdrant_${op}` }, (performance.now() - started) / 1000);
        m?.calls.inc({ target: `qdrant_${op}`, outcome: "ok" });
        return out;
      } catch (err) {
        const s = status(err);
        m?.calls.inc({ target: `qdrant_${op}`, outcome: s ? `http_${s}` : "error" });
        const retryable = s === undefined || s === 429 || s >= 500;
        if (!retryable || attempt >= retries) {
          throw new StoreError(`qdrant ${op} failed${s ? ` (${s})` : ""}: ${(err as Error).message}`, { cause: err });
        }
        m?.retries.inc({ target: `qdrant_${op}` });
        await sleep(Math.min(2000, 100 * 2 ** attempt));
      }
    }
  }

  /** Creates a collection; another replica creating it first (409, or 400 on older servers) is fine. */
  private async create(name: string, body: Parameters<QdrantClient["createCollection"]>[1]): Promise<void> {
    try {
      await this.call("create", () => this.client.createCollection(name, body));
    } catch (err) {
      const { exists } = await this.call("exists", () => this.client.collectionExists(name));
      if (!exists) throw err;
    }
  }

  private async ensureRegistry(): Promise<void> {
    if (this.ready.has(this.registry)) return;
    const { exists } = await this.call("exists", () => this.client.collectionExists(this.registry));
    if (!exists) {
      await this.create(this.registry, { vectors: { size: 1, distance: "Dot" } });
    }
    this.ready.add(this.registry);
  }

  private async ensureData(info: CollectionInfo): Promise<string> {
    const name = this.collectionName(info);
    if (this.ready.has(name)) return name;
    const { exists } = await this.call("exists", () => this.client.collectionExists(name));
    if (!exists) {
      const hnsw = this.opts.hnsw ?? { m: 16, efConstruct: 128 };
      await this.create(name, {
        vectors: { size: info.dimensions, distance: "Cosine" },
        hnsw_config: { m: 0, payload_m: hnsw.m, ef_construct: hnsw.efConstruct },
      });
      await this.call("index", () =>
        this.client.createPayloadIndex(name, {
          wait: true,
          field_name: "knowledgeId",
          field_schema: { type: "keyword", is_tenant: true },
        }),
      );
      await this.call("index", () =>
        this.client.createPayloadIndex(name, { wait: true, field_name: "docsId", field_schema: "keyword" }),
      );
      await this.call("index", () =>
        this.client.createPayloadIndex(name, { wait: true, field_name: "chunkIndex", field_schema: "integer" }),
      );
    }
    this.ready.add(name);
    return name;
  }

  async getCollection(knowledgeId: string): Promise<CollectionInfo | undefined> {
    const cached = this.infos.get(knowledgeId);
    if (cached && Date.now() - cached.at < (this.opts.infoTtlMs ?? 5000))
      return cached.info ? { ...cached.info } : undefined;
    await this.ensureRegistry();
    const points = await this.call("retrieve", () =>
      this.client.retrieve(this.registry, { ids: [registryId(knowledgeId)], with_payload: true }),
    );
    const payload = points[0]?.payload as unknown as CollectionInfo | undefined;
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
    await this.call("upsert", () =>
      this.client.upsert(this.registry, {
        wait: true,
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
    const { exists } = await this.call("exists", () => this.client.collectionExists(collection));
    if (!exists) return;
    await this.call("delete", () => this.client.delete(collection, { wait: true, filter }));
  }

  async dropCollection(knowledgeId: string): Promise<boolean> {
    this.infos.delete(knowledgeId);
    const info = await this.getCollection(knowledgeId);
    if (!info) return false;
    await this.deletePoints(this.collectionName(info), this.kbFilter(knowledgeId));
    await this.call("delete", () =>
      this.client.delete(this.registry, { wait: true, points: [registryId(knowledgeId)] }),
    );
    return true;
  }

  private async require(knowledgeId: string): Promise<{ info: CollectionInfo; name: string }> {
    const info = await this.getCollection(knowledgeId);
    if (!info) throw new StoreError(`no collection for knowledge base ${knowledgeId}`);
    return { info, name: await this.ensureData(info) };
  }

  async replaceDocument(knowledgeId: string, docsId: string, chunks: ChunkWithVector[]): Promise<void> {
    const { info, name } = await this.require(knowledgeId);
    const ids = chunks.map((c) => pointIdOf(c.record.embeddingId));
    const size = this.opts.upsertBatch ?? 256;
    for (let i = 0; i < chunks.length; i += size) {
      const points = chunks.slice(i, i + size).map((c, j) => {
        if (c.vector.length !== info.dimensions) {
          throw new StoreError(`vector has ${c.vector.length} dimensions, collection has ${info.dimensions}`);
        }
        return {
          id: ids[i + j] as string,
          vector: Array.from(c.vector),
          payload: { ...c.record, knowledgeId, docsId },
        };
      });
      await this.call("upsert", () => this.client.upsert(name, { wait: true, points }));
    }
    // Then remove what the new version no longer has: no window where the document is missing.
    const filter: Filter = this.kbFilter(knowledgeId, docsId);
    if (ids.length > 0) filter.must_not = [{ has_id: ids }];
    await this.call("delete", () => this.client.delete(name, { wait: true, filter }));
  }

  async deleteDocument(knowledgeId: string, docsId: string): Promise<number> {
    const info = await this.getCollection(knowledgeId);
    if (!info) return 0;
    const name = await this.ensureData(info);
    const filter = this.kbFilter(knowledgeId, docsId);
    const { count } = await this.call("count", () => this.client.count(name, { filter, exact: true }));
    if (count > 0) await this.call("delete", () => this.client.delete(name, { wait: true, filter }));
    return count;
  }

  async stats(knowledgeId: string): Promise<CollectionStats | undefined> {
    const info = await this.getCollection(knowledgeId);
    if (!info) return undefined;
    const name = await this.ensureData(info);
    const all = this.kbFilter(knowledgeId);
    const firsts: Filter = { must: [...((all.must as Condition[]) ?? []), { key: "chunkIndex", match: { value: 0 } }] };
    const [chunks, documents] = await Promise.all([
      this.call("count", () => this.client.count(name, { filter: all, exact: true })),
      this.call("count", () => this.client.count(name, { filter: firsts, exact: true })),
    ]);
    return { documents: documents.count, chunks: chunks.count };
  }

  /** One search of one tenant: its filter hits the per-tenant HNSW graph (payload_m). */
  private request(q: VectorQuery, knowledgeId: string) {
    return {
      query: Array.from(q.vector),
      filter: { must: [{ key: "knowledgeId", match: { value: knowledgeId } }] },
      limit: q.limit,
      score_threshold: scoreToCosine(q.minScore),
      with_payload: true,
      params: { hnsw_ef: Math.max(this.opts.searchEf ?? 128, q.limit) },
    };
  }

  private toHits(points: { score: number; payload?: Record<string, unknown> | null }[]): VectorHit[] {
    return points
      .filter((p) => p.payload)
      .map((p) => ({ record: p.payload as unknown as ChunkRecord, score: cosineToScore(p.score) }));
  }

  async query(q: VectorQuery): Promise<VectorHit[]> {
    const [hits] = await this.queryBatch([q]);
    return hits ?? [];
  }

  async queryBatch(qs: VectorQuery[]): Promise<VectorHit[][]> {
    // One queryBatch request per physical collection, holding one search per (query, knowledge base).
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
        const res = await this.call("query", () =>
          this.client.queryBatch(name, { searches: items.map((it) => this.request(it.q, it.knowledgeId)) }),
        );
        res.forEach((r, k) => {
          const owner = items[k]?.owner as number;
          lists[owner]?.push(this.toHits(r.points as { score: number; payload?: Record<string, unknown> | null }[]));
        });
      }),
    );
    return lists.map((l, i) => mergeHits(l, qs[i]?.limit ?? 0));
  }

  async close(): Promise<void> {}
}
