// Rate limiters of client-go's workqueue: per-item exponential backoff (5 ms doubling to 1000 s),
// an overall token bucket (10 qps, burst 100), and the maximum of both, which is client-go's
// DefaultControllerRateLimiter.

export interface RateLimiter {
  /** How long to wait before the item may be processed again; counts a failure. */
  when(item: string): number;
  forget(item: string): void;
  numRequeues(item: string): number;
}

export class ItemExponentialFailureRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();
  private readonly baseMs: number;
  private readonly maxMs: number;

  constructor(baseMs = 5, maxMs = 1_000_000) {
    this.baseMs = baseMs;
    this.maxMs = maxMs;
  }

  when(item: string): number {
    const exp = this.failures.get(item) ?? 0;
    this.failures.set(item, exp + 1);
    const delay = this.baseMs * 2 ** exp;
    return Number.isFinite(delay) ? Math.min(delay, this.maxMs) : this.maxMs;
  }

  forget(item: string): void {
    this.failures.delete(item);
  }

  numRequeues(item: string): number {
    return this.failures.get(item) ?? 0;
  }
}

/** A token bucket shared by all items: `qps` tokens a second, at most `burst` saved up. */
export class BucketRateLimiter implements RateLimiter {
  private tokens: number;
  private last: number;
  private readonly qps: number;
  private readonly burst: number;
  private readonly now: () => number;

  constructor(qps = 10, burst = 100, now: () => number = Date.now) {
    this.qps = qps;
    this.burst = burst;
    this.tokens = burst;
    this.now = now;
    this.last = now();
  }

  when(_item: string): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
    this.tokens -= 1; // reserve, as rate.Limiter.Reserve does: the debt is paid by waiting
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }

  forget(_item: string): void {}

  numRequeues(_item: string): number {
    return 0;
  }
}

export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: RateLimiter[];
  constructor(...limiters: RateLimiter[]) {
    this.limiters = limiters;
  }
  when(item: string): number {
    return Math.max(...this.limiters.map((l) => l.when(item)));
  }
  forget(item: string): void {
    for (const l of this.limiters) l.forget(item);
  }
  numRequeues(item: string): number {
    return Math.max(...this.limiters.map((l) => l.numRequeues(item)));
  }
}

export function defaultControllerRateLimiter(): RateLimiter {
  return new MaxOfRateLimiter(new ItemExponentialFailureRateLimiter(5, 1_000_000), new BucketRateLimiter(10, 100));
}
