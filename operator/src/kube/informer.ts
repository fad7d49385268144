// A shared informer: a Reflector feeding an in-memory store (the operator's cache, read by the
// reconcilers instead of the API server), indexes, and event handlers. A relist is turned into
// the adds, updates and deletes it implies; a periodic resync re-delivers every object as an
// update (client-go semantics) so level-triggered reconcilers converge even after a missed event.
import type { Logger } from "@capstan/shared";
import type { KubeHttp } from "@capstan/shared/kube";
import {
  type KubeObject,
  objectKey,
  Reflector,
  type ReflectorOptions,
  type ResourceType,
  resourcePath,
} from "@capstan/shared/kube";

export interface InformerHandlers<T> {
  add?(obj: T): void;
  update?(old: T, obj: T): void;
  delete?(obj: T): void;
}

export interface InformerOptions<T> {
  /** Watch one namespace; absent (and no namespaces): all namespaces. */
  namespace?: string | undefined;
  /**
   * Watch these namespaces, one list+watch each (the operator's RBAC may be Roles in them only, so
   * a cluster-wide watch would be refused); empty or absent: `namespace`, or all namespaces.
   */
  namespaces?: readonly string[] | undefined;
  labelSelector?: string;
  /** Applied to every object before it is stored (e.g. to drop managedFields). */
  transform?: (obj: T) => T;
  /** Periodic resync; 0 or absent: none. */
  resyncMs?: number;
  logger?: Logger;
  reflector?: Partial<ReflectorOptions>;
}

/** Drops what the operator never reads, to keep the cache small (client-go's SetTransform). */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  if (obj.metadata.managedFields) delete obj.metadata.managedFields;
  return obj;
}

export class Informer<T extends KubeObject> {
  readonly type: ResourceType;
  private readonly store = new Map<string, T>();
  private readonly handlers: InformerHandlers<T>[] = [];
  private readonly indexers = new Map<string, (obj: T) => string[]>();
  private readonly indexes = new Map<string, Map<string, Set<string>>>();
  private readonly reflectors: Reflector<T>[];
  private readonly opts: InformerOptions<T>;
  private resyncTimer: NodeJS.Timeout | undefined;
  private synced = false;

  constructor(http: KubeHttp, type: ResourceType, opts: InformerOptions<T> = {}) {
    this.type = type;
    this.opts = opts;
    const scopes: (string | undefined)[] = opts.namespaces?.length ? [...new Set(opts.namespaces)] : [opts.namespace];
    this.reflectors = scopes.map(
      (ns) =>
        new Reflector<T>(
          http,
          resourcePath(type, ns),
          // A relist of one namespace replaces that namespace's objects only.
          { replace: (items) => this.replace(items, ns), apply: (t, obj) => this.apply(t, obj) },
          {
            ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}),
            onError: (err, attempt) =>
              opts.logger?.warn(
                { kind: type.kind, namespace: ns, attempt, err: err.message },
                "watch failed; retrying with backoff",
              ),
            ...opts.reflector,
          },
        ),
    );
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  get lists(): number {
    return this.reflectors.reduce((n, r) => n + r.lists, 0);
  }

  addHandler(h: InformerHandlers<T>): void {
    this.handlers.push(h);
    if (this.synced) for (const obj of this.store.values()) h.add?.(obj);
  }

  /** Registers an index: objects are found by any of the values fn returns. Call before start(). */
  addIndex(name: string, fn: (obj: T) => string[]): void {
    this.indexers.set(name, fn);
    this.indexes.set(name, new Map());
  }

  byIndex(name: string, value: string): T[] {
    const keys = this.indexes.get(name)?.get(value);
    if (!keys) return [];
    return [...keys].map((k) => this.store.get(k)).filter((o): o is T => o !== undefined);
  }

  get(namespace: string, name: string): T | undefined {
    return this.store.get(`${namespace}/${name}`);
  }

  list(namespace?: string): T[] {
    const all = [...this.store.values()];
    return namespace === undefined ? all : all.filter((o) => o.metadata.namespace === namespace);
  }

  get size(): number {
    return this.store.size;
  }

  async start(): Promise<void> {
    await Promise.all(this.reflectors.map((r) => r.start()));
    this.synced = true;
    if (this.opts.resyncMs) {
      this.resyncTimer = setInterval(() => this.resync(), this.opts.resyncMs);
      this.resyncTimer.unref();
    }
  }

  stop(): void {
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    for (const r of this.reflectors) r.stop();
  }

  /** Re-delivers every cached object as an update. */
  resync(): void {
    for (const obj of this.store.values()) for (const h of this.handlers) h.update?.(obj, obj);
  }

  private prepare(obj: T): T {
    return this.opts.transform ? this.opts.transform(obj) : stripManagedFields(obj);
  }

  private index(key: string, old: T | undefined, obj: T | undefined): void {
    for (const [name, fn] of this.indexers) {
      const idx = this.indexes.get(name) as Map<string, Set<string>>;
      for (const v of old ? fn(old) : []) {
        const set = idx.get(v);
        set?.delete(key);
        if (set?.size === 0) idx.delete(v);
      }
      for (const v of obj ? fn(obj) : []) {
        const set = idx.get(v) ?? new Set<string>();
        set.add(key);
        idx.set(v, set);
      }
    }
  }

  private put(obj: T): void {
    const key = objectKey(obj);
    const old = this.store.get(key);
    this.store.set(key, obj);
    this.index(key, old, obj);
    for (const h of this.handlers) {
      try {
        if (old) h.update?.(old, obj);
        else h.add?.(obj);
      } catch (err) {
        this.opts.logger?.error({ err }, "informer handler failed");
      }
    }
  }

  private remove(obj: T): void {
    const key = objectKey(obj);
    const old = this.store.get(key) ?? obj;
    this.store.delete(key);
    this.index(key, old, undefined);
    for (const h of this.handlers) {
      try {
        h.delete?.(old);
      } catch (err) {
        this.opts.logger?.error({ err }, "informer handler failed");
      }
    }
  }

  private replace(items: T[], namespace: string | undefined): void {
    const seen = new Set<string>();
    for (const raw of items) {
      const obj = this.prepare({ ...raw, apiVersion: this.type.apiVersion, kind: this.type.kind });
      const key = objectKey(obj);
      seen.add(key);
      const old = this.store.get(key);
      if (old && old.metadata.resourceVersion === obj.metadata.resourceVersion) continue;
      this.put(obj);
    }
    for (const [key, obj] of this.store)
      if (!seen.has(key) && (namespace === undefined || obj.metadata.namespace === namespace)) this.remove(obj);
  }

  private apply(type: "ADDED" | "MODIFIED" | "DELETED", raw: T): void {
    const obj = this.prepare(raw);
    if (type === "DELETED") this.remove(obj);
    else this.put(obj);
  }
}
