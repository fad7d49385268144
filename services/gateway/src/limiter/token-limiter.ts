// Token accounting per AccessChannel: the TPM limit, the budget per period and the hourly usage,
// in Redis (token-scripts.ts), shared by every replica.
//   admit  before the agent runs (only for a channel with tpm or a budget): the request's prompt
//          tokens (counted here with the gateway's tokenizer) are taken from the TPM window at
//          once, exactly: two replicas cannot both take the last tokens. A spent budget refuses.
//   settle when the answer ends (a stream: at its end), for every request: the window gets the
//          difference between the provider's usage and what admit took (the completion, and the
//          provider's own prompt count), the budget its total, the usage hash its counts. A
//          request that failed before answering gives its prompt tokens back. A channel without
//          limits only has usage to count: that goes through usage-buffer.ts (once a second).
// Completions are only known at their end, so a window can end above the TPM by the completions
// of the requests in flight when it filled (each at most its max_tokens); docs/gateway.md.
// Redis down (the breaker in front of it open): the QPM limiter's policy. local: each replica
// admits floor(TPM / replicas) in its own window, budgets are not checked (their spend is in
// Redis); deny: 503 limiter_unavailable; fail-open: no limit. Settlements that Redis cannot take
// are counted (capstan_gateway_usage_writes_total{outcome="dropped"}) and lost.
import type { Logger } from "@capstan/shared";
import type { AccessChannelSpec } from "@capstan/shared/api";
import type { RedisClient } from "@capstan/shared/redis";
import type { Usage } from "../agents/types.ts";
import { GatewayError } from "../errors.ts";
import type { GatewayMetrics } from "../metrics.ts";
import { type RedisBreaker, RedisUnavailable } from "../redis/breaker.ts";
import { periodOf } from "./budget-period.ts";
import type { RedisDownPolicy } from "./limiter.ts";
import { ADMIT_SCRIPT, channelKeys, SETTLE_SCRIPT } from "./token-scripts.ts";
import { UsageBuffer } from "./usage-buffer.ts";

export interface TokenLimits {
  id: string;
  tpm: number | undefined;
  budget: AccessChannelSpec["budget"];
}

/** What admit took, handed back to settle. */
export interface Reservation {
  prompt: number;
  /** Whether the prompt went into the shared window (Redis), to be corrected at the end. */
  shared: boolean;
  /** The TPM and what is left of it after this prompt (OpenAI's x-ratelimit-*-tokens headers). */
  tpm?: { limit: number; remaining: number };
}

/** Which agent, upstream and model answered: the usage hash's field. */
export interface UsageLabels {
  agent: string;
  upstream: string;
  model: string;
}

export interface TokenAccountsOptions {
  redis: { client: RedisClient; breaker: RedisBreaker } | undefined;
  windowMs: number;
  policy: RedisDownPolicy;
  replicas: number;
  keyPrefix: string;
  /** Hours of usage kept (the usage keys' lifetime). */
  usageRetentionHours: number;
  metrics: GatewayMetrics;
  logger: Logger;
  now?: () => number;
}

type Runner = (...args: Array<string | number>) => Promise<[number, string, number, number]>;

/** The UTC hour of a time, as the usage keys name it: 2027-03-31T13. */
export const hourOf = (ms: number) => new Date(ms).toISOString().slice(0, 13);

export class TokenAccounts {
  private readonly opts: TokenAccountsOptions;
  private readonly now: () => number;
  private readonly instance = Math.random().toString(36).slice(2, 10);
  private seq = 0;
  /** Per-replica windows while Redis is down (policy local): [time, tokens] per channel. */
  private readonly local = new Map<string, Array<[number, number]>>();
  /** Usage of channels without limits, written once a second (usage-buffer.ts). */
  private readonly buffer: UsageBuffer | undefined;
  private readonly admitScript: Runner | undefined;
  private readonly settleScript: Runner | undefined;

  constructor(opts: TokenAccountsOptions) {
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    const redis = opts.redis?.client as unknown as Record<string, unknown> | undefined;
    if (redis) {
      const r = opts.redis?.client as RedisClient;
      if (!redis.capstanTokenAdmit) r.defineCommand("capstanTokenAdmit", { numberOfKeys: 3, lua: ADMIT_SCRIPT });
      if (!redis.capstanTokenSettle) r.defineCommand("capstanTokenSettle", { numberOfKeys: 4, lua: SETTLE_SCRIPT });
      this.admitScript = (...a) => (redis.capstanTokenAdmit as Runner)(...a);
      this.settleScript = (...a) => (redis.capstanTokenSettle as Runner)(...a);
      this.buffer = new UsageBuffer({
        redis: r,
        breaker: opts.redis?.breaker as RedisBreaker,
        retentionSeconds: opts.usageRetentionHours * 3600,
        metrics: opts.metrics,
        logger: opts.logger,
      });
    }
  }

  private member(): string {
    this.seq = (this.seq + 1) % Number.MAX_SAFE_INTEGER;
    return `${this.instance}:${this.seq}`;
  }

  /** Writes what is buffered (graceful stop). */
  close(): Promise<void> {
    return this.buffer?.close() ?? Promise.resolve();
  }

  /** Takes the prompt's tokens from the channel's TPM window, or throws the 429 that says why not. */
  async admit(limits: TokenLimits, prompt: number): Promise<Reservation> {
    const redis = this.opts.redis;
    if (!redis || !this.admitScript) return this.admitLocally(limits, prompt, limits.tpm);
    const keys = channelKeys(this.opts.keyPrefix, limits.id);
    const period = limits.budget ? periodOf(limits.budget.period, this.now()) : undefined;
    let answer: [number, string, number, number];
    try {
      answer = await redis.breaker.run(() =>
        (this.admitScript as Runner)(
          keys.tpm,
          keys.tpmSum,
          keys.budget(period?.id ?? "-"),
          limits.tpm ?? 0,
          this.opts.windowMs,
          this.member(),
          prompt,
          limits.budget?.tokens ?? 0,
        ),
      );
    } catch (err) {
      if (!(err instanceof RedisUnavailable)) throw err;
      return this.fallback(limits, prompt);
    }
    const [allowed, reason, counted, retrySeconds] = answer;
    if (allowed === 1) {
      const tpm = limits.tpm ?? 0;
      return tpm > 0
        ? { prompt, shared: true, tpm: { limit: tpm, remaining: Math.max(0, tpm - counted) } }
        : { prompt, shared: false };
    }
    this.opts.metrics.tokenRejections.inc({ channel: this.opts.metrics.channelLabel.value(limits.id), reason });
    if (reason === "budget" && limits.budget && period) {
      const seconds = Math.max(1, Math.ceil((period.endMs - this.now()) / 1000));
      throw new GatewayError(
        "budget_exhausted",
        { tokens: limits.budget.tokens, period: limits.budget.period, resetsAt: new Date(period.endMs).toISOString() },
        { headers: { "retry-after": String(seconds) } },
      );
    }
    throw this.tpmError(limits.tpm ?? 0, counted, Math.max(1, retrySeconds));
  }

  private tpmError(tpm: number, counted: number, retrySeconds: number): GatewayError {
    return new GatewayError(
      "token_rate_limit_exceeded",
      { limit: tpm, used: counted, retryAfter: retrySeconds },
      {
        headers: {
          "retry-after": String(retrySeconds),
          "x-ratelimit-limit-tokens": String(tpm),
          "x-ratelimit-remaining-tokens": String(Math.max(0, tpm - counted)),
        },
      },
    );
  }

  private fallback(limits: TokenLimits, prompt: number): Reservation {
    this.opts.metrics.limiterBackendErrors.inc({ reason: "unavailable" });
    switch (this.opts.policy) {
      case "deny":
        throw new GatewayError("limiter_unavailable");
      case "fail-open":
        return { prompt, shared: false };
      default:
        return this.admitLocally(limits, prompt, limits.tpm && Math.floor(limits.tpm / this.opts.replicas));
    }
  }

  /** This replica's own window (no Redis, or Redis down under the local policy). */
  private admitLocally(limits: TokenLimits, prompt: number, tpm: number | undefined): Reservation {
    if (!tpm) return { prompt, shared: false };
    const now = this.now();
    const log = (this.local.get(limits.id) ?? []).filter(([t]) => t > now - this.opts.windowMs);
    const used = log.reduce((n, [, tokens]) => n + tokens, 0);
    if (used + prompt > tpm) {
      const retry =
        log.length > 0 ? Math.ceil(((log[0] as [number, number])[0] + this.opts.windowMs - now) / 1000) : 60;
      this.local.set(limits.id, log);
      throw this.tpmError(tpm, used, Math.max(1, retry));
    }
    log.push([now, prompt]);
    if (this.local.size >= 100_000) this.local.clear();
    this.local.set(limits.id, log);
    return { prompt, shared: false };
  }

  /**
   * Records a finished request: the TPM correction, the budget's spend and the hourly usage.
   * Never throws; a write Redis cannot take is counted and dropped.
   */
  settle(
    limits: TokenLimits,
    reservation: Reservation | undefined,
    usage: Usage | undefined,
    labels: UsageLabels,
  ): void {
    const prompt = usage?.prompt_tokens ?? 0;
    const completion = usage?.completion_tokens ?? 0;
    const total = prompt + completion;
    const redis = this.opts.redis;
    const local = this.local.get(limits.id);
    if (reservation && !reservation.shared && local && total !== reservation.prompt) {
      local.push([this.now(), total - reservation.prompt]);
    }
    if (!redis || !this.settleScript) return;
    const keys = channelKeys(this.opts.keyPrefix, limits.id);
    const now = this.now();
    const field = `${labels.agent}\t${labels.upstream}\t${labels.model}`;
    if (!limits.tpm && !limits.budget && this.buffer) {
      this.buffer.add(keys.usage(hourOf(now)), field, prompt, completion);
      return;
    }
    const period = limits.budget ? periodOf(limits.budget.period, now) : undefined;
    const delta = reservation?.shared ? total - reservation.prompt : 0;
    const retention = this.opts.usageRetentionHours * 3600;
    const run = this.settleScript;
    redis.breaker
      .run(() =>
        run(
          keys.tpm,
          keys.tpmSum,
          keys.budget(period?.id ?? "-"),
          keys.usage(hourOf(now)),
          delta,
          this.opts.windowMs,
          this.member(),
          period ? total : 0,
          period ? Math.ceil((period.endMs - now) / 1000) + 86_400 : 1,
          field,
          prompt,
          completion,
          retention,
        ),
      )
      .then(
        () => this.opts.metrics.usageWrites.inc({ outcome: "ok" }),
        (err: Error) => {
          this.opts.metrics.usageWrites.inc({ outcome: "dropped" });
          if (!(err instanceof RedisUnavailable)) this.opts.logger.warn({ err: err.message }, "usage write failed");
        },
      );
  }
}
