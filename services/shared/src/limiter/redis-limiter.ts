// Exact requests-per-window limiting shared by every replica of a service (the gateway's
// per-channel QPM, search's per-key requests per minute): a sliding log in one Redis sorted set
// per limited subject, checked and updated by one Lua script in one round trip (EVALSHA). The
// script reads Redis' own clock (TIME), so replicas with skewed clocks still agree, and Redis runs
// scripts one at a time, so no two replicas can both take the last slot: at most `limit` requests
// are accepted in any window, however many replicas share the Redis. One key per subject, so the
// script runs unchanged on a Redis Cluster (the slot of `<prefix><subject>`).
import type { Socket } from "node:net";
import { isCluster, type RedisClient } from "../redis/client.ts";
import type { LimitDecision } from "./decision.ts";

// KEYS[1] = the channel's log; ARGV = limit, window (ms), unique member id.
// Returns {allowed (0|1), remaining, ms until the oldest entry leaves the window}.
export const SLIDING_LOG_SCRIPT = `
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
local allowed = 0
if count < limit then
  redis.call('ZADD', key, now, ARGV[3])
  count = count + 1
  allowed = 1
end
redis.call('PEXPIRE', key, math.ceil(window / 1000))
local reset = 0
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
if oldest[2] then reset = tonumber(oldest[2]) + window - now end
return {allowed, limit - count, math.ceil(reset / 1000)}
`;

type ScriptRunner = (key: string, limit: number, windowMs: number, member: string) => Promise<[number, number, number]>;

export class RedisLimiter {
  readonly redis: RedisClient;
  private readonly windowMs: number;
  private readonly prefix: string;
  private readonly instance = Math.random().toString(36).slice(2, 10);
  private seq = 0;
  private everReady: boolean;
  private corked = false;
  private readonly run: ScriptRunner;

  constructor(redis: RedisClient, opts: { windowMs: number; keyPrefix: string }) {
    this.redis = redis;
    this.windowMs = opts.windowMs;
    this.prefix = opts.keyPrefix;
    // defineCommand sends EVALSHA and falls back to EVAL once on NOSCRIPT (e.g. after a restart).
    if (!(redis as unknown as Record<string, unknown>).capstanSlidingLog) {
      redis.defineCommand("capstanSlidingLog", { numberOfKeys: 1, lua: SLIDING_LOG_SCRIPT });
    }
    const r = redis as unknown as { capstanSlidingLog: ScriptRunner };
    this.run = (key, limit, windowMs, member) => r.capstanSlidingLog(key, limit, windowMs, member);
    this.everReady = redis.status === "ready";
    redis.once("ready", () => {
      this.everReady = true;
    });
  }

  /** True when the connection is up; commands are not queued while it is not. */
  get ready(): boolean {
    return this.redis.status === "ready";
  }

  /** True before the first connection was made (start-up), when waiting briefly beats falling back. */
  get starting(): boolean {
    return (
      !this.everReady &&
      (this.redis.status === "connecting" || this.redis.status === "wait" || this.redis.status === "connect")
    );
  }

  /**
   * True until the first connection was made, whatever the client's state meanwhile: what a
   * replica's readiness waits for (bounded by the caller: the gateway's
   * CAPSTAN_LIMITER_READY_WAIT_MS). A Redis Cluster client also passes through "reconnecting"
   * while the cluster it found is not serving every slot yet; a replica that reported ready then
   * decided its first requests locally, beside the shared count.
   */
  get neverConnected(): boolean {
    return !this.everReady && this.redis.status !== "end";
  }

  /** Resolves true when the connection is up within timeoutMs. */
  waitReady(timeoutMs: number): Promise<boolean> {
    if (this.ready) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.redis.off("ready", onReady);
        resolve(ok);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.redis.once("ready", onReady);
    });
  }

  keyOf(channelId: string): string {
    return `${this.prefix}${channelId}`;
  }

  /**
   * Limiter calls issued in the same tick leave in one socket write: the socket is corked at the
   * first and uncorked on the next tick. This is what ioredis' enableAutoPipelining does for
   * concurrent requests, without its cost on every single call (a Pipeline object per command:
   * ~30 µs of CPU per request at low concurrency). Only when the client does not auto-pipeline.
   */
  private cork(): void {
    // A cluster client spreads commands over one socket per node: nothing single to cork.
    if (this.corked || isCluster(this.redis) || this.redis.options.enableAutoPipelining) return;
    const stream = (this.redis as unknown as { stream?: Socket }).stream;
    if (!stream?.writable) return;
    this.corked = true;
    stream.cork();
    process.nextTick(() => {
      this.corked = false;
      stream.uncork();
    });
  }

  async check(channelId: string, limit: number): Promise<LimitDecision> {
    this.cork();
    this.seq = (this.seq + 1) % Number.MAX_SAFE_INTEGER;
    const [allowed, remaining, resetMs] = await this.run(
      this.keyOf(channelId),
      limit,
      this.windowMs,
      `${this.instance}:${this.seq}`,
    );
    return {
      allowed: allowed === 1,
      limit,
      remaining: Math.max(0, remaining),
      resetMs,
      windowMs: this.windowMs,
      backend: "redis",
    };
  }
}
