// client-go's rate-limiting work queue: an item is queued at most once however often it is added
// (dirty set), is never handed to two workers at once (processing set: an add while it is being
// processed marks it dirty and it is queued again on done()), can be added after a delay (the
// earliest pending time wins), and can be re-added with per-item backoff. Metrics are
// controller-runtime's workqueue_* series.
import { type Counter, type Gauge, type Histogram, metricFamilies, type Registry } from "@capstan/shared";
import type { RateLimiter } from "./rate-limiter.ts";

export interface QueueMetrics {
  depth: Gauge<"name" | "controller">;
  adds: Counter<"name" | "controller">;
  retries: Counter<"name" | "controller">;
  queueDuration: Histogram<"name" | "controller">;
  workDuration: Histogram<"name" | "controller">;
  unfinished: Gauge<"name" | "controller">;
  longestRunning: Gauge<"name" | "controller">;
}

const BUCKETS = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000];

export function queueMetrics(registry: Registry): QueueMetrics {
  const labelNames = ["name", "controller"] as const;
  const m = metricFamilies(registry);
  return {
    depth: m.gauge("workqueue_depth", "Current depth of workqueue", labelNames),
    adds: m.counter("workqueue_adds_total", "Total number of adds handled by workqueue", labelNames),
    retries: m.counter("workqueue_retries_total", "Total number of retries handled by workqueue", labelNames),
    queueDuration: m.histogram(
      "workqueue_queue_duration_seconds",
      "How long in seconds an item stays in workqueue before being requested",
      labelNames,
      BUCKETS,
    ),
    workDuration: m.histogram(
      "workqueue_work_duration_seconds",
      "How long in seconds processing an item from workqueue takes",
      labelNames,
      BUCKETS,
    ),
    unfinished: m.gauge(
      "workqueue_unfinished_work_seconds",
      "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
      labelNames,
    ),
    longestRunning: m.gauge(
      "workqueue_longest_running_processor_seconds",
      "How many seconds has the longest running processor for workqueue been running",
      labelNames,
    ),
  };
}

interface Delayed {
  item: string;
  at: number;
}

/** A binary min-heap of delayed items by ready time. */
class DelayHeap {
  private readonly a: Delayed[] = [];
  get size(): number {
    return this.a.length;
  }
  peek(): Delayed | undefined {
    return this.a[0];
  }
  push(d: Delayed): void {
    const a = this.a;
    a.push(d);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((a[p] as Delayed).at <= d.at) break;
      a[i] = a[p] as Delayed;
      i = p;
    }
    a[i] = d;
  }
  pop(): Delayed | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      // sift the last element down from the root hole
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        let mAt = last.at;
        if (l < a.length && (a[l] as Delayed).at < mAt) {
          m = l;
          mAt = (a[l] as Delayed).at;
        }
        if (r < a.length && (a[r] as Delayed).at < mAt) m = r;
        if (m === i) break;
        a[i] = a[m] as Delayed;
        i = m;
      }
      a[i] = last;
    }
    return top;
  }
}

export interface WorkQueueOptions {
  name: string;
  rateLimiter: RateLimiter;
  metrics?: QueueMetrics;
  now?: () => number;
}

export class WorkQueue {
  readonly name: string;
  private readonly queue: string[] = [];
  private head = 0;
  private readonly dirty = new Set<string>();
  private readonly processing = new Map<string, number>();
  private readonly addedAt = new Map<string, number>();
  private readonly waiting = new Map<string, number>();
  private readonly heap = new DelayHeap();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private readonly getters: ((item: string | undefined) => void)[] = [];
  private shuttingDown = false;
  private readonly rateLimiter: RateLimiter;
  private readonly metrics: QueueMetrics | undefined;
  private readonly labels: { name: string; controller: string };
  private readonly now: () => number;
  private metricsTimer: NodeJS.Timeout | undefined;

  constructor(opts: WorkQueueOptions) {
    this.name = opts.name;
    this.rateLimiter = opts.rateLimiter;
    this.metrics = opts.metrics;
    this.labels = { name: opts.name, controller: opts.name };
    this.now = opts.now ?? Date.now;
    if (this.metrics) {
      this.metricsTimer = setInterval(() => this.updateUnfinished(), 500);
      this.metricsTimer.unref();
    }
  }

  get length(): number {
    return this.queue.length - this.head;
  }

  /** Items waiting for a delay to pass. */
  get delayed(): number {
    return this.waiting.size;
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  add(item: string): void {
    if (this.shuttingDown || this.dirty.has(item)) return;
    this.metrics?.adds.inc(this.labels);
    this.dirty.add(item);
    if (!this.addedAt.has(item)) this.addedAt.set(item, this.now());
    if (this.processing.has(item)) return;
    const getter = this.getters.shift();
    if (getter) {
      this.dirty.delete(item);
      this.startProcessing(item);
      getter(item);
      return;
    }
    this.queue.push(item);
    this.metrics?.depth.inc(this.labels);
  }

  addAfter(item: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(item);
      return;
    }
    const at = this.now() + delayMs;
    const current = this.waiting.get(item);
    if (current !== undefined && current <= at) return; // an earlier wake-up is already pending
    this.waiting.set(item, at);
    this.heap.push({ item, at });
    this.schedule();
  }

  addRateLimited(item: string): void {
    this.metrics?.retries.inc(this.labels);
    this.addAfter(item, this.rateLimiter.when(item));
  }

  forget(item: string): void {
    this.rateLimiter.forget(item);
  }

  numRequeues(item: string): number {
    return this.rateLimiter.numRequeues(item);
  }

  /** The next item, or undefined once the queue shuts down. Call done(item) after processing. */
  get(): Promise<string | undefined> {
    if (this.length > 0) {
      const item = this.queue[this.head] as string;
      this.head += 1;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
      this.metrics?.depth.dec(this.labels);
      this.dirty.delete(item);
      this.startProcessing(item);
      return Promise.resolve(item);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.getters.push(resolve));
  }

  done(item: string): void {
    const started = this.processing.get(item);
    if (started !== undefined) this.metrics?.workDuration.observe(this.labels, (this.now() - started) / 1000);
    this.processing.delete(item);
    if (this.dirty.has(item)) {
      this.dirty.delete(item);
      this.add(item);
    }
  }

  shutDown(): void {
    this.shuttingDown = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.metricsTimer) clearInterval(this.metricsTimer);
    for (const g of this.getters.splice(0)) g(undefined);
  }

  private startProcessing(item: string): void {
    const t = this.now();
    const added = this.addedAt.get(item);
    if (added !== undefined) this.metrics?.queueDuration.observe(this.labels, (t - added) / 1000);
    this.addedAt.delete(item);
    this.processing.set(item, t);
  }

  private schedule(): void {
    const next = this.heap.peek();
    if (!next || next.at >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = next.at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, next.at - this.now()));
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const t = this.now();
    for (let top = this.heap.peek(); top && top.at <= t; top = this.heap.peek()) {
      this.heap.pop();
      if (this.waiting.get(top.item) !== top.at) continue; // superseded by an earlier wake-up
      this.waiting.delete(top.item);
      this.add(top.item);
    }
    this.schedule();
  }

  private updateUnfinished(): void {
    if (!this.metrics) return;
    const t = this.now();
    let total = 0;
    let longest = 0;
    for (const started of this.processing.values()) {
      const s = (t - started) / 1000;
      total += s;
      longest = Math.max(longest, s);
    }
    this.metrics.unfinished.set(this.labels, total);
    this.metrics.longestRunning.set(this.labels, longest);
  }
}
