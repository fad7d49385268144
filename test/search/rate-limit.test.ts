// Per-key requests per minute on a real Redis, with the gateway's exact sliding-log limiter: two
// search replicas share one key's limit, the request over it is a 429 in the search envelope with
// Retry-After, another key and the internal caller are not affected.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { HANDBOOK } from "./corpus.ts";
import { call, INTERNAL_TOKEN, ingest, knowledgeBase, type Running, searchKey, startSearch } from "./helpers.ts";

const suffix = `${process.pid}-${Date.now().toString(36)}`;
const LIMITED = `cap_srch_limited_${suffix}`;
const OTHER = `cap_srch_other_${suffix}`;
let a: Running;
let b: Running;

beforeAll(async () => {
  const kbs = [knowledgeBase("handbook")];
  const keys = [
    searchKey(`limited-${suffix}`, LIMITED, { knowledgeIds: ["kb_handbook"], requestsPerMinute: 5 }),
    searchKey(`other-${suffix}`, OTHER, { knowledgeIds: ["kb_handbook"], requestsPerMinute: 5 }),
  ];
  const config = { redisUrl: inject("redisUrl"), limiter: { redisTimeoutMs: 10_000 } };
  a = await startSearch({ kbs, keys, config });
  b = await startSearch({ kbs, keys, config });
  await ingest(a.internalUrl, "kb_handbook", HANDBOOK.slice(0, 2));
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const body = { knowledgeIds: ["kb_handbook"], text: "vacation days", minSimilarity: 0 };

describe("per-key requests per minute", () => {
  it("accepts the key's limit across two replicas, then answers 429 with Retry-After", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      statuses.push((await call(i % 2 === 0 ? a.url : b.url, "/v1/rag/search", { token: LIMITED, body })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    const over = await call(b.url, "/v1/rag/search", { token: LIMITED, body });
    expect(over.status).toBe(429);
    expect(over.body.code).toBe(429);
    expect(over.body.data).toBeNull();
    expect(over.body.message).toMatch(
      /^rate limit exceeded: at most 5 requests per minute with this key; retry after \d+ s$/,
    );
    expect(over.body.message).not.toContain(LIMITED);
    const retryAfter = Number(over.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(over.headers.get("x-capstan-error")).toBe("SEARCH_ERR_RATE_LIMITED");
    expect(over.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    // The batch endpoint shares the limit.
    const batch = await call(a.url, "/v1/rag/search/batch", { token: LIMITED, body: { queries: [body] } });
    expect(batch.status).toBe(429);
  });

  it("limits each key on its own, and not the internal caller", async () => {
    expect((await call(a.url, "/v1/rag/search", { token: OTHER, body })).status).toBe(200);
    for (let i = 0; i < 8; i++) {
      expect((await call(a.internalUrl, "/v1/rag/search", { token: INTERNAL_TOKEN, body })).status).toBe(200);
    }
    const metrics = await (await fetch(`${a.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(
      /capstan_search_limiter_decisions_total\{[^}]*backend="redis"[^}]*result="rejected"[^}]*\} [1-9]/,
    );
    expect(metrics).not.toContain(LIMITED);
  });
});
