// List + watch of one resource collection, kept correct across disconnects: watches resume
// from the last resourceVersion (bookmarks keep it fresh), 410 Gone triggers a relist, and
// reconnects back off exponentially with full jitter so many watchers don't reconnect in step.
import { KubeApiError, type KubeClient } from "./client.ts";

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; [k: string]: unknown };
  [k: string]: unknown;
}

export interface ReflectorHandlers<T extends KubeObject> {
  /** The full set after every (re)list. */
  onList(items: T[]): void;
  onEvent(type: "ADDED" | "MODIFIED" | "DELETED", obj: T): void;
  onError?(err: Error, attempt: number): void;
}

export interface ReflectorOptions {
  /** Server-side watch timeout; the watch is re-opened after it (default 300 s). */
  watchTimeoutSeconds?: number;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  labelSelector?: string;
}

export class Reflector<T extends KubeObject> {
  private resourceVersion: string | undefined;
  private stopped = false;
  private abort: AbortController | undefined;
  private attempt = 0;
  private wake: (() => void) | undefined;

  private readonly client: KubeClient;
  private readonly path: string;
  private readonly handlers: ReflectorHandlers<T>;
  private readonly opts: ReflectorOptions;

  constructor(client: KubeClient, path: string, handlers: ReflectorHandlers<T>, opts: ReflectorOptions = {}) {
    this.client = client;
    this.path = path;
    this.handlers = handlers;
    this.opts = opts;
  }

  /** Resolves after the first successful list; keeps watching in the background until stop(). */
  start(): Promise<void> {
    return new Promise((resolve) => {
      void this.run(resolve);
    });
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
    this.wake?.();
  }

  private async run(onFirstList: () => void): Promise<void> {
    let listed = false;
    while (!this.stopped) {
      try {
        if (!this.resourceVersion) {
          await this.list();
          if (!listed) {
            listed = true;
            onFirstList();
          }
        }
        await this.watchOnce();
        this.attempt = 0;
      } catch (err) {
        if (this.stopped) break;
        if (err instanceof KubeApiError && err.status === 410) {
          this.resourceVersion = undefined; // expired: relist at once
          continue;
        }
        this.attempt += 1;
        this.handlers.onError?.(err as Error, this.attempt);
        await this.sleep(this.backoff());
      }
    }
  }

  private backoff(): number {
    const min = this.opts.minBackoffMs ?? 200;
    const max = this.opts.maxBackoffMs ?? 30_000;
    const ceiling = Math.min(max, min * 2 ** Math.min(this.attempt, 20));
    return min + Math.random() * (ceiling - min);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async list(): Promise<void> {
    const query: Record<string, string | undefined> = { labelSelector: this.opts.labelSelector };
    const list = await this.client.request<{ metadata: { resourceVersion: string }; items: T[] }>(this.path, { query });
    this.resourceVersion = list.metadata.resourceVersion;
    this.handlers.onList(list.items);
  }

  private watchOnce(): Promise<void> {
    return new Promise((resolve, reject) => {
      let failed: Error | undefined;
      const query = {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: this.opts.watchTimeoutSeconds ?? 300,
        labelSelector: this.opts.labelSelector,
      };
      const onEvent = (type: string, obj: T & { code?: number; message?: string }) => {
        if (type === "ERROR") {
          const status = obj.code ?? 500;
          failed = new KubeApiError(status, status === 410 ? "Expired" : "WatchError", obj.message ?? "watch error");
          this.abort?.abort();
          return;
        }
        if (obj.metadata?.resourceVersion) this.resourceVersion = obj.metadata.resourceVersion;
        if (type === "BOOKMARK") return;
        if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") this.handlers.onEvent(type, obj);
      };
      const onDone = (err: unknown) => {
        const e = failed ?? (err as Error | null);
        if (e && !this.stopped) reject(e);
        else resolve();
      };
      this.client
        .watcher()
        .watch(this.path, query, onEvent, onDone)
        .then((controller) => {
          this.abort = controller;
          if (this.stopped) controller.abort();
        })
        .catch(reject);
    });
  }
}
