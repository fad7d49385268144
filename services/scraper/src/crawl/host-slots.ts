// Politeness per host across every job and every replica, in Redis: a host is fetched by at most
// SCRAPER_HOST_CONCURRENCY pages at once, or, when its robots.txt asks for a Crawl-delay, one page
// at a time with each starting at least the delay after the previous one ended (as pacing.ts does
// within one in-memory job). A job's own maxConcurrency is the same kind of slot, on the job.
// A slot is a lease (a sorted-set member scored by when it lapses): a replica that dies holding
// one frees it after leaseMs, so a crash never blocks a host. Time is Redis's own clock (TIME),
// the one clock every replica shares.
import { randomUUID } from "node:crypto";
import type { RedisClient } from "@capstan/shared/redis";

// KEYS: host leases, host last end, job leases; ARGV: token, host capacity, delay ms, lease ms,
// job capacity (0: none). Returns 0 when the slot is taken, else milliseconds to wait first.
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local jobCap = tonumber(ARGV[5])
if jobCap > 0 and redis.call('ZCARD', KEYS[3]) >= jobCap then
  local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  return math.max(1, math.min(250, tonumber(first[2]) - now))
end
local busy = redis.call('ZCARD', KEYS[1])
if busy >= tonumber(ARGV[2]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return math.max(1, math.min(250, tonumber(first[2]) - now))
end
local delay = tonumber(ARGV[3])
if delay > 0 then
  local last = tonumber(redis.call('GET', KEYS[2]) or '0')
  if now < last + delay then return last + delay - now end
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease)
if jobCap > 0 then
  redis.call('ZADD', KEYS[3], now + lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[3], lease)
end
return 0`;

// KEYS: host leases, host last end, job leases; ARGV: token, delay ms.
const RELEASE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
local delay = tonumber(ARGV[2])
if delay > 0 then redis.call('SET', KEYS[2], now, 'PX', delay + 60000) end
return 1`;

interface SlotScripts {
  acquireHostSlot(...args: (string | number)[]): Promise<number>;
  releaseHostSlot(...args: (string | number)[]): Promise<number>;
}

export interface SlotRequest {
  host: string;
  /** Crawl-delay applied to the host (ms); 0 for none. */
  delayMs: number;
  /** The job's own bound on pages at once, and its id; undefined for none. */
  job?: { id: string; concurrency: number };
}

export interface Slot {
  /** Ends the turn: the host's next page counts its delay from now. */
  release(): Promise<void>;
}

export class HostSlots {
  private readonly redis: RedisClient & SlotScripts;
  private readonly opts: { prefix: string; hostConcurrency: number; leaseMs: number };

  constructor(redis: RedisClient, opts: { prefix: string; hostConcurrency: number; leaseMs: number }) {
    this.opts = opts;
    redis.defineCommand("acquireHostSlot", { numberOfKeys: 3, lua: ACQUIRE });
    redis.defineCommand("releaseHostSlot", { numberOfKeys: 3, lua: RELEASE });
    this.redis = redis as RedisClient & SlotScripts;
  }

  private keys(req: SlotRequest): [string, string, string] {
    const h = `${this.opts.prefix}:host:${req.host}`;
    return [`${h}:leases`, `${h}:last`, `${this.opts.prefix}:job:${req.job?.id ?? "-"}:leases`];
  }

  /**
   * Takes the slot if it is free now, or answers how long to wait before asking again: the caller
   * decides whether to wait in place (short) or to put the page back for later (long).
   */
  async tryAcquire(req: SlotRequest): Promise<{ slot: Slot } | { waitMs: number }> {
    const token = randomUUID();
    const keys = this.keys(req);
    const capacity = req.delayMs > 0 ? 1 : this.opts.hostConcurrency;
    const wait = Number(
      await this.redis.acquireHostSlot(
        ...keys,
        token,
        capacity,
        req.delayMs,
        this.opts.leaseMs,
        req.job?.concurrency ?? 0,
      ),
    );
    if (wait > 0) return { waitMs: wait };
    return {
      slot: {
        release: async () => {
          await this.redis.releaseHostSlot(...keys, token, req.delayMs);
        },
      },
    };
  }
}
