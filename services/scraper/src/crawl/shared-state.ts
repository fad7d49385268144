// The state of shared jobs in RedisClient, changed only by the Lua scripts below so that every change a
// page makes is one atomic step, whichever replica makes it and however often a page is retried:
//   <p>:job:<id>          hash: kind, status, body, createdAt, expiresAt, queued, completed, failed,
//                         bytes, stopped
//   <p>:job:<id>:warn     hash: warning topic → sentence
//   <p>:job:<id>:seen     set of page keys ever queued (or left out past the limit)
//   <p>:job:<id>:pending  set of page keys queued and not finished: the job completes when it empties
//   <p>:job:<id>:done     set of page keys finished: a retried page is counted and kept once
//   <p>:job:<id>:pages    list of results (JSON), in the order they finished
//   <p>:job:<id>:errors   list of errors (JSON), at most MAX_ERRORS; <p>:job:<id>:blocked the same for robots.txt
//   <p>:jobs              sorted set id → expiresAt (jobs kept); <p>:running the running ones
// <p> is the scraper's prefix in braces (a Redis Cluster hash tag: one slot for all of it). Every
// job key expires with the job.
import type { RedisClient } from "@capstan/shared/redis";
import { MAX_SEEN } from "./crawler.ts";

export const MAX_ERRORS = 1_000;

export interface JobKeys {
  meta: string;
  warn: string;
  seen: string;
  pending: string;
  done: string;
  pages: string;
  errors: string;
  blocked: string;
}

export function jobKeys(prefix: string, id: string): JobKeys {
  const k = `${prefix}:job:${id}`;
  return {
    meta: k,
    warn: `${k}:warn`,
    seen: `${k}:seen`,
    pending: `${k}:pending`,
    done: `${k}:done`,
    pages: `${k}:pages`,
    errors: `${k}:errors`,
    blocked: `${k}:blocked`,
  };
}

const EXPIRE_ALL = `
local function expireAll(n, at)
  for i = 1, n do redis.call('PEXPIREAT', KEYS[i], at) end
end`;

// KEYS: meta, jobs, running; ARGV: id, kind, body, createdAt, expiresAt, maxActive, maxJobs, now, prefix
// Returns 1, or -1 (too many running), -2 (too many kept and none finished).
const CREATE = `
local now = tonumber(ARGV[8])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[6]) then return -1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[7]) then
  local evicted = false
  for _, old in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    if not redis.call('ZSCORE', KEYS[3], old) then
      local k = ARGV[9] .. ':job:' .. old
      redis.call('DEL', k, k .. ':warn', k .. ':seen', k .. ':pending', k .. ':done', k .. ':pages', k .. ':errors', k .. ':blocked')
      redis.call('ZREM', KEYS[2], old)
      evicted = true
      break
    end
  end
  if not evicted then return -2 end
end
redis.call('HSET', KEYS[1], 'kind', ARGV[2], 'status', 'scraping', 'body', ARGV[3], 'createdAt', ARGV[4],
  'expiresAt', ARGV[5], 'queued', 0, 'completed', 0, 'failed', 0, 'bytes', 0)
redis.call('PEXPIREAT', KEYS[1], ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
return 1`;

// KEYS: meta, seen, pending, blocked; ARGV: limit, retry (1: a page run again), then pairs of
// (page key, "q" to queue | the URL robots.txt disallows). Returns the number of URLs newly listed
// as disallowed, then the keys to add as BullMQ jobs: new ones, and on a retry those still pending
// (their job may never have been added).
const ENQUEUE = `${EXPIRE_ALL}
if redis.call('HGET', KEYS[1], 'status') ~= 'scraping' or redis.call('HGET', KEYS[1], 'stopped') then return {0} end
local limit = tonumber(ARGV[1])
local retry = ARGV[2] == '1'
local queued = tonumber(redis.call('HGET', KEYS[1], 'queued'))
local seen = redis.call('SCARD', KEYS[2])
local out = {0}
for i = 3, #ARGV, 2 do
  local key, what = ARGV[i], ARGV[i + 1]
  if redis.call('SISMEMBER', KEYS[2], key) == 0 then
    if seen < ${MAX_SEEN} then
      redis.call('SADD', KEYS[2], key)
      seen = seen + 1
      if what ~= 'q' then
        out[1] = out[1] + 1
        if redis.call('LLEN', KEYS[4]) < ${MAX_ERRORS} then redis.call('RPUSH', KEYS[4], what) end
      elseif queued < limit then
        queued = queued + 1
        redis.call('SADD', KEYS[3], key)
        out[#out + 1] = key
      end
    end
  elseif retry and what == 'q' and redis.call('SISMEMBER', KEYS[3], key) == 1 then
    out[#out + 1] = key
  end
end
redis.call('HSET', KEYS[1], 'queued', queued)
expireAll(4, tonumber(redis.call('HGET', KEYS[1], 'expiresAt')))
return out`;

// KEYS: meta, pending, done, pages, errors, seen, running; ARGV: id, page key, outcome ("ok",
// "error", "skip"), payload (a result's JSON, "" for a page not kept; an error's JSON), maxBytes,
// final page key after redirects ("" for none). Returns the job's status afterwards.
const FINISH = `${EXPIRE_ALL}
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'gone' end
if redis.call('SADD', KEYS[3], ARGV[2]) == 1 and status == 'scraping' and not redis.call('HGET', KEYS[1], 'stopped') then
  local outcome, payload = ARGV[3], ARGV[4]
  if outcome == 'ok' then
    redis.call('HINCRBY', KEYS[1], 'completed', 1)
    if payload ~= '' then
      local bytes = tonumber(redis.call('HGET', KEYS[1], 'bytes'))
      if bytes + #payload > tonumber(ARGV[5]) then
        redis.call('HSET', KEYS[1], 'stopped', 'bytes')
        redis.call('HSET', KEYS[1] .. ':warn', 'bytes', 'results reached SCRAPER_JOB_MAX_BYTES (' .. ARGV[5] .. ' bytes): the job stopped early')
      else
        redis.call('RPUSH', KEYS[4], payload)
        redis.call('HINCRBY', KEYS[1], 'bytes', #payload)
      end
    end
  elseif outcome == 'error' then
    redis.call('HINCRBY', KEYS[1], 'completed', 1)
    redis.call('HINCRBY', KEYS[1], 'failed', 1)
    if redis.call('LLEN', KEYS[5]) < ${MAX_ERRORS} then redis.call('RPUSH', KEYS[5], payload) end
  end
  if ARGV[6] ~= '' then redis.call('SADD', KEYS[6], ARGV[6]) end
end
redis.call('SREM', KEYS[2], ARGV[2])
if status == 'scraping' and redis.call('SCARD', KEYS[2]) == 0 then
  status = 'completed'
  redis.call('HSET', KEYS[1], 'status', status)
  redis.call('ZREM', KEYS[7], ARGV[1])
end
redis.call('PEXPIREAT', KEYS[1] .. ':warn', redis.call('HGET', KEYS[1], 'expiresAt'))
expireAll(6, tonumber(redis.call('HGET', KEYS[1], 'expiresAt')))
return status`;

// KEYS: meta, running; ARGV: id. Returns the status before: a running job is now cancelled.
const CANCEL = `
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'scraping' then
  redis.call('HSET', KEYS[1], 'status', 'cancelled')
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return status or 'gone'`;

export interface JobScripts {
  createJob(meta: string, jobs: string, running: string, ...args: (string | number)[]): Promise<number>;
  enqueuePages(
    meta: string,
    seen: string,
    pending: string,
    blocked: string,
    ...args: (string | number)[]
  ): Promise<[number, ...string[]]>;
  finishPage(
    meta: string,
    pending: string,
    done: string,
    pages: string,
    errors: string,
    seen: string,
    running: string,
    ...args: (string | number)[]
  ): Promise<string>;
  cancelJob(meta: string, running: string, id: string): Promise<string>;
}

/** The connection with the job scripts defined on it (EVALSHA, loaded again after a Redis restart). */
export function withJobScripts(redis: RedisClient): RedisClient & JobScripts {
  redis.defineCommand("createJob", { numberOfKeys: 3, lua: CREATE });
  redis.defineCommand("enqueuePages", { numberOfKeys: 4, lua: ENQUEUE });
  redis.defineCommand("finishPage", { numberOfKeys: 7, lua: FINISH });
  redis.defineCommand("cancelJob", { numberOfKeys: 2, lua: CANCEL });
  return redis as RedisClient & JobScripts;
}
