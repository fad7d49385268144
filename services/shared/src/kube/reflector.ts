// List + watch of one collection, kept correct across disconnects, as client-go's Reflector, on
// client-node's primitives (its Watch; lists through KubeHttp.list, client-node's request
// authentication, as plain JSON like the Watch's events):
// paginated list, then a watch from the list's resourceVersion with bookmarks; a watch that
// ends is resumed from the last resourceVersion seen; 410 Gone (an expired resourceVersion)
// relists; failures back off exponentially with full jitter, and a watch that ends at once with
// no events counts as a failure, so a flapping server does not get a reconnect storm. A watch
// that goes silent for longer than the server-side timeout plus a margin is treated as dead.
import { Watch } from "@kubernetes/client-node";
import { isStatus, KubeApiError, type KubeHttp, statusOf } from "./http.ts";
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
      const page = await this.http.list<T>(
        this.path,
        {
          labelSelector: this.opts.labelSelector,
          fieldSelector: this.opts.fieldSelector,
          limit: this.opts.pageSize ?? 500,
          continue: cont,
        },
        60_000,
      );
      for (const item of page.items) items.push(item);
      rv = page.metadata.resourceVersion;
      cont = page.metadata.continue || undefined;
    } while (cont && !this.stopped);
    this.lists += 1;
    this.resourceVersion = rv;
    this.sink.replace(items, rv);
  }

  /**
   * One watch through client-node's Watch (its request authentication, its line parsing). Its
   * inactivity timeout is the dead-connection detection: the server ends every watch after
   * timeoutSeconds, so a watch silent for longer than that (plus a margin) is on a dead connection.
   */
  private watchOnce(): Promise<WatchOutcome> {
    const started = Date.now();
    const timeoutSeconds = this.opts.watchTimeoutSeconds ?? Math.floor(300 + (this.opts.random ?? Math.random)() * 300);
    const watch = new Watch(this.http.kubeConfig);
    setWatchInactivityTimeout(watch, (timeoutSeconds + 30) * 1000);
    let events = 0;
    let failure: Error | undefined;
    let ended = false;
    let opened = false;
    return new Promise<WatchOutcome>((resolve, reject) => {
      const done = (err: unknown) => {
        // Not yet opened: the request itself failed (an HTTP status, or no answer at all).
        if (!opened && !ended) this.http.countWatch(String(statusOf(err) ?? "<error>"));
        ended = true;
        this.abort = undefined;
        if (failure) reject(failure);
        else if (err && !this.stopped) reject(watchError(err));
        else resolve({ events, durationMs: Date.now() - started });
      };
      const onEvent = (type: string, obj: T & WatchStatus) => {
        if (failure) return;
        events += 1;
        try {
          this.handleEvent(type, obj);
        } catch (err) {
          failure = err as Error;
          this.abort?.abort();
        }
      };
      const query = {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds,
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
      };
      watch.watch(this.path, query, onEvent, done).then(
        (controller) => {
          this.abort = controller;
          if (ended) return;
          opened = true;
          this.http.countWatch("200");
          if (this.stopped) controller.abort();
          else this.opts.onState?.("watching");
        },
        (err: unknown) => done(err),
      );
    });
  }

  private handleEvent(type: string, obj: T & WatchStatus): void {
    if (type === "ERROR") {
      const status = obj.code ?? 500;
      throw new KubeApiError(status, obj.reason ?? "WatchError", obj.message ?? "watch error");
    }
    const rv = obj.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
    if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") this.sink.apply(type, obj);
  }
}

/**
 * client-node's Watch aborts a watch after requestTimeoutMs (30 s) without data: a quiet
 * collection would reconnect every 30 s. The field is private in its types but is the knob its
 * maintainers name for this; reflector.test.ts fails if an upgrade renames it.
 */
export function setWatchInactivityTimeout(watch: Watch, ms: number): void {
  (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = ms;
}

interface WatchStatus {
  code?: number;
  reason?: string;
  message?: string;
}

/** A failed watch request (client-node's Error with statusCode) as a KubeApiError, so 410 relists. */
function watchError(err: unknown): Error {
  const status = statusOf(err);
  if (status === undefined || err instanceof KubeApiError) return err as Error;
  return new KubeApiError(status, "WatchFailed", (err as Error).message || `watch: HTTP ${status}`);
}
