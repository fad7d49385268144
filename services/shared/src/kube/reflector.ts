// List + watch of one collection, kept correct across disconnects, as client-go's Reflector:
// paginated list, then a watch from the list's resourceVersion with bookmarks; a watch that
// ends is resumed from the last resourceVersion seen; 410 Gone (an expired resourceVersion)
// relists; failures back off exponentially with full jitter, and a watch that ends at once with
// no events counts as a failure, so a flapping server does not get a reconnect storm. A watch
// that goes silent for longer than the server-side timeout plus a margin is treated as dead.
import { isStatus, KubeApiError, type KubeHttp } from "./http.ts";
import type { KubeObject } from "./objects.ts";

export interface ReflectorSink<T extends KubeObject> {
  /** The complete set after a (re)list. */
  replace(items: T[], resourceVersion: string): void;
  apply(type: "ADDED" | "MODIFIED" | "DELETED", obj: T): void;
}

export interface ReflectorOptions {
  labelSelector?: string;
  fieldSelector?: string;
  pageSize?: number;
  /** Server-side watch timeout in seconds; default a random value in [300, 600) as client-go. */
  watchTimeoutSeconds?: number;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  random?: () => number;
  onError?: (err: Error, attempt: number) => void;
  /** Called after each (re)list and each watch (re)open, for tests and metrics. */
  onState?: (state: "listed" | "watching" | "backoff") => void;
}

/** Full jitter: a uniform delay in [0, min(max, base·2^attempt)). */
export function fullJitterBackoff(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  const cap = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * cap);
}

interface WatchOutcome {
  events: number;
  durationMs: number;
}

export class Reflector<T extends KubeObject> {
  private readonly http: KubeHttp;
  private readonly path: string;
  private readonly sink: ReflectorSink<T>;
  private readonly opts: ReflectorOptions;
  private resourceVersion: string | undefined;
  private stopped = false;
  private abort: AbortController | undefined;
  private wake: (() => void) | undefined;
  private attempt = 0;
  /** Lists done so far (the first plus relists after 410 or errors). */
  lists = 0;

  constructor(http: KubeHttp, path: string, sink: ReflectorSink<T>, opts: ReflectorOptions = {}) {
    this.http = http;
    this.path = path;
    this.sink = sink;
    this.opts = opts;
  }

  get lastSyncResourceVersion(): string | undefined {
    return this.resourceVersion;
  }

  /** Resolves after the first successful list, then keeps watching until stop(). */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      void this.run(resolve).catch(reject);
    });
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
    this.wake?.();
  }

  private async run(onFirstList: () => void): Promise<void> {
    let listed = false;
    let needList = true;
    while (!this.stopped) {
      try {
        if (needList) {
          await this.list();
          needList = false;
          this.opts.onState?.("listed");
          if (!listed) {
            listed = true;
            onFirstList();
          }
        }
        const outcome = await this.watchOnce();
        if (outcome.events === 0 && outcome.durationMs < 1000) throw new Error("watch closed at once");
        this.attempt = 0;
      } catch (err) {
        if (this.stopped) break;
        if (isStatus(err, 410)) {
          // Expired resourceVersion: relist. Back off too if that keeps happening.
          needList = true;
          this.resourceVersion = undefined;
          if (this.attempt === 0) {
            this.attempt = 1;
            continue;
          }
        }
        this.attempt += 1;
        this.opts.onError?.(err as Error, this.attempt);
        this.opts.onState?.("backoff");
        await this.sleep(
          fullJitterBackoff(
            this.attempt,
            this.opts.minBackoffMs ?? 800,
            this.opts.maxBackoffMs ?? 30_000,
            this.opts.random ?? Math.random,
          ),
        );
      }
    }
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
    const items: T[] = [];
    let cont: string | undefined;
    let rv = "";
    do {
      const page = await this.http.json<{ metadata: { resourceVersion: string; continue?: string }; items: T[] }>(
        this.path,
        {
          query: {
            labelSelector: this.opts.labelSelector,
            fieldSelector: this.opts.fieldSelector,
            limit: this.opts.pageSize ?? 500,
            continue: cont,
          },
          timeoutMs: 60_000,
        },
      );
      for (const item of page.items) items.push(item);
      rv = page.metadata.resourceVersion;
      cont = page.metadata.continue || undefined;
    } while (cont && !this.stopped);
    this.lists += 1;
    this.resourceVersion = rv;
    this.sink.replace(items, rv);
  }

  private async watchOnce(): Promise<WatchOutcome> {
    const started = Date.now();
    const timeoutSeconds = this.opts.watchTimeoutSeconds ?? Math.floor(300 + (this.opts.random ?? Math.random)() * 300);
    const abort = new AbortController();
    this.abort = abort;
    if (this.stopped) abort.abort();
    // Dead-connection detection: the server ends every watch after timeoutSeconds, so a watch
    // silent for longer than that (plus a margin) is on a dead connection.
    const idleMs = (timeoutSeconds + 30) * 1000;
    let idle = setTimeout(() => abort.abort(new Error("watch idle")), idleMs);
    let events = 0;
    try {
      const res = await this.http.stream(
        this.path,
        {
          watch: 1,
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds,
          labelSelector: this.opts.labelSelector,
          fieldSelector: this.opts.fieldSelector,
        },
        abort.signal,
      );
      if (res.status !== 200) {
        const text = await res.text();
        let body: { reason?: string; message?: string } = {};
        try {
          body = JSON.parse(text);
        } catch {
          body = { message: text.slice(0, 200) };
        }
        throw new KubeApiError(res.status, body.reason ?? "WatchFailed", body.message ?? `watch: HTTP ${res.status}`);
      }
      this.opts.onState?.("watching");
      const decoder = new TextDecoder();
      let buffer = "";
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        clearTimeout(idle);
        idle = setTimeout(() => abort.abort(new Error("watch idle")), idleMs);
        buffer += decoder.decode(chunk, { stream: true });
        let nl = buffer.indexOf("\n");
        while (nl >= 0) {
          const line = buffer.slice(0, nl).trim();
          buffer = buffer.slice(nl + 1);
          nl = buffer.indexOf("\n");
          if (!line) continue;
          events += 1;
          this.handleLine(line);
        }
      }
      return { events, durationMs: Date.now() - started };
    } finally {
      clearTimeout(idle);
      if (!abort.signal.aborted) abort.abort();
    }
  }

  private handleLine(line: string): void {
    const event = JSON.parse(line) as {
      type: string;
      object: T & { code?: number; reason?: string; message?: string };
    };
    if (event.type === "ERROR") {
      const status = event.object.code ?? 500;
      throw new KubeApiError(status, event.object.reason ?? "WatchError", event.object.message ?? "watch error");
    }
    const rv = event.object.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
    if (event.type === "ADDED" || event.type === "MODIFIED" || event.type === "DELETED") {
      this.sink.apply(event.type, event.object);
    }
  }
}
