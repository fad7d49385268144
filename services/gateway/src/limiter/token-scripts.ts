// The Lua of token accounting (token-limiter.ts), one round trip each, on keys that share one
// Redis hash tag, the channel id ({namespace/name}), so a Redis Cluster keeps them on one node:
//   <prefix>{<channel>}:tpm        sorted set: one member per count, "<id>:<tokens>", scored by
//                                  Redis' clock (µs); the sliding window of the channel's TPM
//   <prefix>{<channel>}:tpm:sum    the sum of the members' tokens (kept beside the log so a check
//                                  does not add the window up)
//   <prefix>{<channel>}:budget:<period start>   tokens spent in the budget's period
//   <prefix>{<channel>}:usage:<hour>            hash, per agent/upstream/model: prompt, completion
//                                               and request counts of that UTC hour
// Like the QPM log, the scripts read Redis' own clock (TIME) and Redis runs them one at a time,
// so replicas with skewed clocks agree and two replicas cannot both take the last tokens.

import { subjectKey } from "@capstan/shared/redis";

/** Tokens of a log member "<id>:<tokens>" (tokens may be negative: a correction). */
const MEMBER_TOKENS = "tonumber(string.match(m, ':(-?%d+)$'))";

// KEYS: tpm log, tpm sum, budget. ARGV: tpm (0: none), window ms, member id, prompt tokens,
// budget (0: none). Returns {allowed 0|1, "tpm"|"budget"|"", tokens counted, seconds to retry}.
export const ADMIT_SCRIPT = `
local tpm = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000
local prompt = tonumber(ARGV[4])
local budget = tonumber(ARGV[5])
if budget > 0 then
  local spent = tonumber(redis.call('GET', KEYS[3]) or '0')
  if spent >= budget then return {0, 'budget', spent, 0} end
end
if tpm == 0 then return {1, '', 0, 0} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - window)
if #old > 0 then
  local freed = 0
  for _, m in ipairs(old) do freed = freed + ${MEMBER_TOKENS} end
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
  redis.call('DECRBY', KEYS[2], freed)
end
local sum = tonumber(redis.call('GET', KEYS[2]) or '0')
if sum + prompt > tpm then
  local need = sum + prompt - tpm
  local reset = window
  local entries = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  for i = 1, #entries, 2 do
    local m = entries[i]
    need = need - ${MEMBER_TOKENS}
    if need <= 0 then
      reset = tonumber(entries[i + 1]) + window - now
      break
    end
  end
  return {0, 'tpm', sum, math.ceil(reset / 1000000)}
end
redis.call('ZADD', KEYS[1], now, ARGV[3] .. ':' .. prompt)
redis.call('INCRBY', KEYS[2], prompt)
local ttl = math.ceil(window / 1000)
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return {1, '', sum + prompt, 0}
`;

// KEYS: tpm log, tpm sum, budget, usage hour. ARGV: tpm correction (tokens to add to the window;
// may be negative; 0: none), window ms, member id, budget tokens to add (0: none), budget key
// lifetime (s), usage field prefix, prompt, completion, usage key lifetime (s).
export const SETTLE_SCRIPT = `
local delta = tonumber(ARGV[1])
if delta ~= 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local ttl = tonumber(ARGV[2])
  redis.call('ZADD', KEYS[1], now, ARGV[3] .. ':' .. delta)
  redis.call('INCRBY', KEYS[2], delta)
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
local spend = tonumber(ARGV[4])
if spend > 0 then
  redis.call('INCRBY', KEYS[3], spend)
  redis.call('EXPIRE', KEYS[3], tonumber(ARGV[5]))
end
local field = ARGV[6]
redis.call('HINCRBY', KEYS[4], field .. '\\tprompt', tonumber(ARGV[7]))
redis.call('HINCRBY', KEYS[4], field .. '\\tcompletion', tonumber(ARGV[8]))
redis.call('HINCRBY', KEYS[4], field .. '\\trequests', 1)
redis.call('EXPIRE', KEYS[4], tonumber(ARGV[9]))
return 1
`;

/** The keys of one channel, all under its hash tag. */
export function channelKeys(prefix: string, channelId: string) {
  const tag = subjectKey(prefix, channelId);
  return {
    tpm: `${tag}:tpm`,
    tpmSum: `${tag}:tpm:sum`,
    budget: (periodId: string) => `${tag}:budget:${periodId}`,
    usage: (hour: string) => `${tag}:usage:${hour}`,
  };
}
