// The Qdrant adapter's registry: one point per knowledge base in `<prefix>_registry` whose
// payload is the knowledge base's vector sets. The serving vector set's settings sit at the top
// level (model, dimensions, chunking: what searches use), `building` is the vector set being
// filled after a model change, `retired` (with `retiredAt`) the one replaced by the last switch.
// Switching is one point upsert, which Qdrant applies atomically: that is the alias flip.
import { createHash } from "node:crypto";
import { QdrantCluster } from "./qdrant-cluster.ts";
import { QdrantCallError, type QdrantHttp } from "./qdrant-http.ts";
import { type CollectionInfo, pointIdOf } from "./types.ts";

export interface RegistryEntry extends CollectionInfo {
  building?: CollectionInfo | undefined;
  retired?: CollectionInfo | undefined;
  /** Epoch milliseconds of the switch that retired `retired`. */
  retiredAt?: number | undefined;
}

export const isMissing = (err: unknown) => err instanceof QdrantCallError && err.status === 404;

function registryId(key: string): string {
  return pointIdOf(`emb_${createHash("sha256").update(key).digest("hex")}`);
}

/** The settings of one vector set, without the registry's bookkeeping. */
export function settingsOf(c: CollectionInfo): CollectionInfo {
  return { knowledgeId: c.knowledgeId, model: c.model, dimensions: c.dimensions, chunking: c.chunking };
}

export class QdrantRegistry {
  private readonly http: QdrantHttp;
  readonly name: string;
  private readonly ttlMs: number;
  private ready = false;
  /** Entries, cached briefly: every query needs them and they rarely change. */
  private readonly cache = new Map<string, { entry: RegistryEntry | undefined; at: number }>();
  /**
   * Writes (and forgets) of each entry so far. A read that a write overtook may hold the entry
   * from before it (a search's read still on its way during a switch): it is not cached, else
   * every read for the next ttlMs would see the old vector set.
   */
  private readonly writes = new Map<string, number>();

  /** Creates the registry sharded and replicated on a Qdrant cluster (qdrant-cluster.ts). */
  private readonly cluster: QdrantCluster;

  constructor(http: QdrantHttp, prefix: string, ttlMs: number, cluster?: QdrantCluster) {
    this.http = http;
    this.cluster = cluster ?? new QdrantCluster(http, {}, { prefix });
    this.name = `${prefix}_registry`;
    this.ttlMs = ttlMs;
  }

  private async ensure(): Promise<void> {
    if (this.ready) return;
    if (!(await this.cluster.exists(this.name))) {
      await this.cluster.create(this.name, "registry", { vectors: { size: 1, distance: "Dot" } });
    }
    this.ready = true;
  }

  /** Runs fn on the registry; when it was deleted behind our back, re-creates it and retries once. */
  private async on<T>(fn: () => Promise<T>): Promise<T> {
    await this.ensure();
    try {
      return await fn();
    } catch (err) {
      if (!isMissing(err)) throw err;
      this.ready = false;
      await this.ensure();
      return fn();
    }
  }

  forget(key: string): void {
    this.wrote(key);
    this.cache.delete(key);
  }

  private wrote(key: string): void {
    this.writes.set(key, (this.writes.get(key) ?? 0) + 1);
  }

  /** The entry, from the cache when fresh (fresh: always read it). */
  async get(key: string, fresh = false): Promise<RegistryEntry | undefined> {
    const cached = this.cache.get(key);
    if (!fresh && cached && Date.now() - cached.at < this.ttlMs) return cached.entry;
    const writes = this.writes.get(key) ?? 0;
    const points = await this.on(() =>
      this.http.call<{ payload?: unknown }[]>("retrieve", "POST", `collections/${this.name}/points`, {
        ids: [registryId(key)],
        with_payload: true,
      }),
    );
    const entry = (points[0]?.payload ?? undefined) as RegistryEntry | undefined;
    if ((this.writes.get(key) ?? 0) === writes) this.cache.set(key, { entry, at: Date.now() });
    return entry;
  }

  /** Replaces the whole entry in one upsert (atomic on the server). */
  async put(entry: RegistryEntry): Promise<void> {
    const payload = JSON.parse(JSON.stringify(entry)) as RegistryEntry; // drops undefined fields
    try {
      await this.on(() =>
        this.http.call("upsert", "PUT", `collections/${this.name}/points?wait=true`, {
          points: [{ id: registryId(entry.knowledgeId), vector: [1], payload }],
        }),
      );
    } catch (err) {
      this.forget(entry.knowledgeId); // it may have been applied all the same: read it again
      throw err;
    }
    this.wrote(entry.knowledgeId);
    this.cache.set(entry.knowledgeId, { entry: payload, at: Date.now() });
  }

  async remove(key: string): Promise<void> {
    await this.on(() =>
      this.http.call("delete", "POST", `collections/${this.name}/points/delete?wait=true`, {
        points: [registryId(key)],
      }),
    );
    this.forget(key);
  }
}
