// Bounded concurrency with a bounded wait queue: `concurrency` tasks run, at most `maxQueue`
// wait, and the rest are refused at once (QUEUE_FULL → 503 with Retry-After) instead of piling
// up. A waiting task whose signal aborts leaves the queue.
import { ScraperError } from "./errors.ts";

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

export class Limiter {
  private running = 0;
  private readonly waiting: Waiter[] = [];
  readonly concurrency: number;
  readonly maxQueue: number;
  private readonly onChange: ((running: number, queued: number) => void) | undefined;

  constructor(concurrency: number, maxQueue: number, onChange?: (running: number, queued: number) => void) {
    this.concurrency = concurrency;
    this.maxQueue = maxQueue;
    this.onChange = onChange;
  }

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** True when a new task would be refused. */
  get full(): boolean {
    return this.running >= this.concurrency && this.waiting.length >= this.maxQueue;
  }

  /**
   * Runs fn when a slot frees. `force` skips the queue bound (the URLs of an admitted bulk
   * request, whose own fan-out is bounded) but still waits for a slot.
   */
  async run<T>(fn: () => Promise<T>, opts: { signal?: AbortSignal; force?: boolean } = {}): Promise<T> {
    await this.acquire(opts);
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  private acquire(opts: { signal?: AbortSignal; force?: boolean }): Promise<void> {
    if (this.running < this.concurrency) {
      this.running++;
      this.onChange?.(this.running, this.waiting.length);
      return Promise.resolve();
    }
    if (!opts.force && this.waiting.length >= this.maxQueue) {
      return Promise.reject(new ScraperError("QUEUE_FULL", [], { retryAfter: 1 }));
    }
    if (opts.signal?.aborted) return Promise.reject(opts.signal.reason as Error);
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve: () => {
          opts.signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        reject,
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
        this.onChange?.(this.running, this.waiting.length);
        reject(opts.signal?.reason as Error);
      };
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(waiter);
      this.onChange?.(this.running, this.waiting.length);
    });
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next.resolve();
    else this.running--;
    this.onChange?.(this.running, this.waiting.length);
  }
}
