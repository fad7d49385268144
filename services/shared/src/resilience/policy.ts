// The one resilience policy of every outbound call (search, scraper, renderer, LLM and embedding
// providers, rerankers, Qdrant), built on cockatiel:
//   - a timeout per attempt (cockatiel's aggressive timeout: an attempt that ignores its signal
//     still ends on time);
//   - bounded retries with FULL jitter: before retry n a uniform wait in [0, min(max, base·2^(n-1)));
//   - Retry-After honoured (seconds or HTTP-date): the wait is what the server asked, and when it
//     asks for longer than the cap the call gives up at once with the server's answer (retrying
//     sooner would be refused again; the caller can pass Retry-After on);
//   - give-up after maxAttempts, or before a wait that would end past the call's deadline;
//   - optionally a circuit breaker (consecutive retryable failures open it; after halfOpenAfterMs
//     one trial call goes through; success closes it), for dependencies that can be down;
//   - metrics: every attempt (outcome, latency), every retry, and per call the attempts it took,
//     its final outcome and its duration (shared metrics.ts, bounded labels).
// A client supplies only what is its own: the attempt (one HTTP exchange that throws on failure),
// how to classify a failure, and its own error types for a timeout and an open circuit.
import {
  BrokenCircuitError,
  type CircuitBreakerPolicy,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  DelegateBackoff,
  handleWhen,
  type IPolicy,
  noop,
  retry,
  TaskCancelledError,
  TimeoutStrategy,
  timeout,
  wrap,
} from "cockatiel";
import type { OutboundMetrics } from "../metrics.ts";
import { parseRetryAfter } from "./retry-after.ts";
import { isRetryableStatus } from "./retryable.ts";

/** How the policy sees one failed attempt. */
export interface Failure {
  /** Whether another attempt may succeed (timeouts, connection errors, 408/429/5xx). */
  retry: boolean;
  /** The attempt's metric outcome: "http_503", "timeout", "error", ... (a bounded set). */
  outcome: string;
  /** The server's Retry-After (header text, or seconds). */
  retryAfter?: string | number | null | undefined;
}

export interface PolicyOptions {
  /** Metric label: the dependency, e.g. "search", "llm", "qdrant". */
  target: string;
  /** Attempts in all, the first included (default 3). */
  maxAttempts?: number;
  /** Per attempt; absent: the attempt keeps its own time (e.g. a stream that outlives it). */
  timeoutMs?: number;
  /** Full-jitter backoff: retry n waits up to min(maxDelayMs, baseDelayMs·2^(n-1)). Default 200. */
  baseDelayMs?: number;
  /** Default 5000. */
  maxDelayMs?: number;
  /** A Retry-After longer than this ends the call at once (default 30 s). */
  retryAfterCapMs?: number;
  /** Budget of the whole call from its start: no retry whose wait would end after it. */
  deadlineMs?: number;
  /** A circuit breaker in front of the dependency; absent: none. */
  breaker?: { consecutiveFailures: number; halfOpenAfterMs: number };
  /** Default: classifyFailure. */
  classify?: (err: unknown) => Failure;
  /** The client's own error for an attempt that timed out (default: OutboundTimeoutError). */
  timeoutError?: (timeoutMs: number, target: string) => Error;
  /** The client's own error when the breaker refuses a call (default: CircuitOpenError). */
  circuitOpenError?: (target: string) => Error;
  metrics?: OutboundMetrics | undefined;
  /** Called before each wait (tests read the chosen delays; logs). */
  onRetry?: (info: { attempt: number; delayMs: number; outcome: string }) => void;
  /** Jitter source in [0, 1) (tests). */
  random?: () => number;
}

export interface AttemptContext {
  /** Aborted when the caller gives up or the attempt's timeout passes: hand it to fetch. */
  signal: AbortSignal;
  /** 1 for the first attempt. */
  attempt: number;
}

export interface ExecuteOptions {
  signal?: AbortSignal | undefined;
  /** Overrides the policy's metric label for this call (e.g. one per operation). */
  target?: string;
  /** Overrides the policy's deadline for this call. */
  deadlineMs?: number;
}

/** An attempt that ran past its timeout (when the client has no error of its own for it). */
export class OutboundTimeoutError extends Error {
  readonly timeoutMs: number;
  constructor(target: string, timeoutMs: number) {
    super(`${target}: no answer within ${timeoutMs} ms`);
    this.name = "OutboundTimeoutError";
    this.timeoutMs = timeoutMs;
  }
}

/** The breaker is open: the dependency failed repeatedly and is not called for a while. */
export class CircuitOpenError extends Error {
  constructor(target: string) {
    super(`${target}: circuit open after repeated failures; not called until it recovers`);
    this.name = "CircuitOpenError";
  }
}

/**
 * The default classification: an error with a numeric `status` is an HTTP answer (retryable by
 * isRetryableStatus, its `retryAfter` honoured); a timeout is retryable; anything else is a
 * connection failure, retryable.
 */
export function classifyFailure(err: unknown): Failure {
  const e = err as { status?: unknown; retryAfter?: unknown; name?: unknown } | null;
  if (e instanceof CircuitOpenError) return { retry: false, outcome: "circuit_open" };
  if (typeof e?.status === "number" && e.status > 0) {
    const retryAfter = typeof e.retryAfter === "string" || typeof e.retryAfter === "number" ? e.retryAfter : undefined;
    return { retry: isRetryableStatus(e.status), outcome: `http_${e.status}`, retryAfter };
  }
  if (e instanceof OutboundTimeoutError || e?.name === "TimeoutError") return { retry: true, outcome: "timeout" };
  return { retry: true, outcome: "error" };
}

/** `run`, or the signal's reason as soon as the caller aborts (even during a backoff wait). */
function abortable<T>(run: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return run;
  if (signal.aborted) {
    run.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      run.catch(() => {});
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    run.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

export class OutboundPolicy {
  readonly target: string;
  private readonly o: Required<Pick<PolicyOptions, "maxAttempts" | "baseDelayMs" | "maxDelayMs" | "retryAfterCapMs">> &
    PolicyOptions;
  private readonly breaker: CircuitBreakerPolicy | undefined;
  /** Breaker and timeout around each attempt (either may be absent). */
  private readonly perAttempt: IPolicy;

  constructor(opts: PolicyOptions) {
    this.target = opts.target;
    this.o = { maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 5_000, retryAfterCapMs: 30_000, ...opts };
    const classify = this.o.classify ?? classifyFailure;
    this.breaker = opts.breaker
      ? circuitBreaker(
          // Only failures that say "the dependency is unwell" count; a 4xx is the caller's.
          handleWhen((err) => err instanceof TaskCancelledError || classify(err).retry),
          {
            halfOpenAfter: opts.breaker.halfOpenAfterMs,
            breaker: new ConsecutiveBreaker(opts.breaker.consecutiveFailures),
          },
        )
      : undefined;
    const policies: IPolicy[] = [];
    if (this.breaker) policies.push(this.breaker);
    if (opts.timeoutMs !== undefined) policies.push(timeout(opts.timeoutMs, TimeoutStrategy.Aggressive));
    this.perAttempt =
      policies.length === 0 ? noop : policies.length === 1 ? (policies[0] as IPolicy) : wrap(...policies);
  }

  /** "closed", "open", "half_open" or "isolated"; "closed" without a breaker. */
  get circuit(): "closed" | "open" | "half_open" | "isolated" {
    switch (this.breaker?.state) {
      case CircuitState.Open:
        return "open";
      case CircuitState.HalfOpen:
        return "half_open";
      case CircuitState.Isolated:
        return "isolated";
      default:
        return "closed";
    }
  }

  /** The full-jitter wait before retry n (1-based). */
  backoffMs(retryNumber: number): number {
    const ceiling = Math.min(this.o.maxDelayMs, this.o.baseDelayMs * 2 ** (retryNumber - 1));
    return Math.floor((this.o.random ?? Math.random)() * ceiling);
  }

  /**
   * Runs `attempt` until it succeeds, fails for good, or the retries or the deadline are spent;
   * rejects with the last attempt's error (translated for a timeout or an open circuit), or with
   * the signal's reason as soon as the caller aborts.
   */
  execute<T>(attempt: (ctx: AttemptContext) => Promise<T>, opts: ExecuteOptions = {}): Promise<T> {
    const o = this.o;
    const target = opts.target ?? o.target;
    const m = o.metrics;
    const classify = o.classify ?? classifyFailure;
    const deadlineMs = opts.deadlineMs ?? o.deadlineMs;
    const signal = opts.signal;
    const started = performance.now();
    let attempts = 0;
    let again = false;
    let waitMs = 0;
    let final = "ok";

    const once = async (ctx: { signal: AbortSignal }): Promise<T> => {
      attempts++;
      if (attempts > 1) m?.retries.inc({ target });
      const t0 = performance.now();
      let outcome = "ok";
      try {
        return await this.perAttempt.execute(
          (inner) => attempt({ signal: inner.signal, attempt: attempts }),
          ctx.signal,
        );
      } catch (raw) {
        const err =
          raw instanceof TaskCancelledError && !signal?.aborted
            ? (o.timeoutError?.(o.timeoutMs ?? 0, target) ?? new OutboundTimeoutError(target, o.timeoutMs ?? 0))
            : raw instanceof BrokenCircuitError
              ? (o.circuitOpenError?.(target) ?? new CircuitOpenError(target))
              : raw;
        const failure =
          raw instanceof BrokenCircuitError
            ? { retry: false, outcome: "circuit_open" }
            : raw instanceof TaskCancelledError && !signal?.aborted
              ? { retry: true, outcome: "timeout" }
              : classify(err);
        outcome = signal?.aborted ? "cancelled" : failure.outcome;
        const wait = this.decide(failure, attempts, started, deadlineMs, signal);
        again = wait !== undefined;
        waitMs = wait ?? 0;
        if (!again)
          final = signal?.aborted
            ? "cancelled"
            : failure.outcome === "circuit_open"
              ? "circuit_open"
              : failure.retry
                ? "gave_up"
                : "failed";
        else o.onRetry?.({ attempt: attempts, delayMs: waitMs, outcome });
        throw err;
      } finally {
        m?.calls.inc({ target, outcome });
        m?.latency.observe({ target }, (performance.now() - t0) / 1000);
      }
    };

    const policy = retry(
      handleWhen(() => again),
      { maxAttempts: o.maxAttempts - 1, backoff: new DelegateBackoff(() => waitMs) },
    ).dangerouslyUnref();
    const run = policy.execute(once, signal).finally(() => {
      m?.callAttempts.observe({ target, outcome: final }, attempts);
      m?.callDuration.observe({ target }, (performance.now() - started) / 1000);
    });
    return abortable(run, signal);
  }

  /** The wait before the next attempt, or undefined to give up. */
  private decide(
    failure: Failure,
    attempts: number,
    started: number,
    deadlineMs: number | undefined,
    signal: AbortSignal | undefined,
  ): number | undefined {
    if (signal?.aborted || !failure.retry || attempts >= this.o.maxAttempts) return undefined;
    const hinted = parseRetryAfter(failure.retryAfter);
    if (hinted !== undefined && hinted > this.o.retryAfterCapMs) return undefined;
    const wait = hinted ?? this.backoffMs(attempts);
    if (deadlineMs !== undefined && performance.now() - started + wait >= deadlineMs) return undefined;
    return wait;
  }
}
