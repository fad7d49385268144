// Redis keys that scripts and transactions use together must live in one hash slot, or a Redis
// Cluster refuses the command (CROSSSLOT). The rule in Capstan: every key belongs to one subject
// (a channel, a key, ...) and its name carries that subject's hash tag, `{...}`, the only part
// Redis Cluster hashes when present. Keys of one subject therefore always share a slot, and
// different subjects spread over the cluster. Build multi-key names with these helpers only;
// test/redis/topologies.test.ts (limiter, history), test/redis/tokens-cluster.test.ts (token
// accounting) and test/scraper/shared-jobs-cluster.test.ts (crawl jobs) run them on a real cluster.

/** `<prefix>{<subject>}`: the subject's base key. The subject must not contain braces. */
export function subjectKey(prefix: string, subject: string): string {
  if (/[{}]/.test(subject) || /[{}]/.test(prefix))
    throw new Error(`a Redis key part may not contain braces: ${prefix}${subject}`);
  return `${prefix}{${subject}}`;
}

/**
 * A companion of a key that must share its slot. When `key` already carries a hash tag the
 * companion is `<key>:<suffix>` (same tag); otherwise the whole key becomes the tag,
 * `{<key>}:<suffix>`, which hashes exactly as `key` does, so keys written before hash tags existed
 * (e.g. history streams) keep their names.
 */
export function companionKey(key: string, suffix: string): string {
  const open = key.indexOf("{");
  const close = open >= 0 ? key.indexOf("}", open + 1) : -1;
  if (close > open + 1) return `${key}:${suffix}`;
  if (key.includes("{") || key.includes("}"))
    throw new Error(`a Redis key with an empty or unbalanced hash tag: ${key}`);
  return `{${key}}:${suffix}`;
}
