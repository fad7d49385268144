// SearchKey authentication over real HTTP: hash lookup, rotation overlap, validity window,
// scope, IP allow-lists (IPv4, IPv6, trusted proxies), the internal token, and every error
// envelope of the search endpoint.
import { verifyingHash } from "@capstan/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HANDBOOK } from "./corpus.ts";
import { call, INTERNAL_TOKEN, ingest, knowledgeBase, type Running, searchKey, startSearch } from "./helpers.ts";

const HOUR = 3_600_000;
const now = Date.now();
const iso = (t: number) => new Date(t).toISOString();

/** The HMAC key the operator generates (capstan-key-verifier), given to search in env. */
const VERIFIER = "key-verifier-of-the-operator-0123456789";

const keys = [
  // A user-supplied key (keySecretRef): status carries only its HMAC under the verifier key.
  searchKey("supplied", "x", { knowledgeIds: ["kb_handbook"] }, { keyHash: verifyingHash("hunter2", VERIFIER) }),
  searchKey("scoped", "key-scoped", { knowledgeIds: ["kb_handbook"] }),
  searchKey("other", "key-other", { knowledgeIds: ["kb_other"] }),
  searchKey("future", "key-future", { knowledgeIds: ["kb_handbook"], validFrom: iso(now + HOUR) }),
  searchKey("ended", "key-ended", { knowledgeIds: ["kb_handbook"], validUntil: iso(now - HOUR) }),
  searchKey("expired-status", "key-expired-status", { knowledgeIds: ["kb_handbook"] }, { expiresAt: iso(now - 1000) }),
  searchKey("window", "key-window", {
    knowledgeIds: ["kb_handbook"],
    validFrom: iso(now - HOUR),
    validUntil: iso(now + HOUR),
  }),
  searchKey(
    "rotated",
    "key-rotated-new",
    { knowledgeIds: ["kb_handbook"] },
    {
      previousKeys: [
        {
          keyHash: searchKey("x", "key-rotated-old", { knowledgeIds: [] }).status?.keyHash as string,
          validUntil: iso(now + HOUR),
        },
        {
          keyHash: searchKey("x", "key-rotated-older", { knowledgeIds: [] }).status?.keyHash as string,
          validUntil: iso(now - HOUR),
        },
      ],
    },
  ),
  searchKey("v4-ok", "key-v4-ok", { knowledgeIds: ["kb_handbook"], allowedCIDRs: ["10.0.0.0/8", "127.0.0.0/8"] }),
  searchKey("v4-no", "key-v4-no", { knowledgeIds: ["kb_handbook"], allowedCIDRs: ["10.0.0.0/8", "192.168.0.1"] }),
  searchKey("v6-ok", "key-v6-ok", { knowledgeIds: ["kb_handbook"], allowedCIDRs: ["::1/128"] }),
  searchKey("v6-no", "key-v6-no", { knowledgeIds: ["kb_handbook"], allowedCIDRs: ["2001:db8::/32"] }),
  searchKey("proxied", "key-proxied", {
    knowledgeIds: ["kb_handbook"],
    allowedCIDRs: ["203.0.113.0/24", "2001:db8::/32"],
  }),
];

let v4: Running;
let v6: Running;
let proxied: Running;

beforeAll(async () => {
  const kbs = [knowledgeBase("handbook"), knowledgeBase("secret")];
  v4 = await startSearch({ kbs, keys, config: { keyVerifier: VERIFIER } });
  await ingest(v4.internalUrl, "kb_handbook", HANDBOOK.slice(0, 3));
  // The same service (same store) reached over IPv6 loopback, and behind a trusted proxy (127.0.0.1).
  v6 = await startSearch({ kbs, keys, host: "::1" });
  await ingest(v6.internalUrl, "kb_handbook", HANDBOOK.slice(0, 3));
  proxied = await startSearch({ kbs, keys, config: { trustedProxies: ["127.0.0.1/32"] } });
  await ingest(proxied.internalUrl, "kb_handbook", HANDBOOK.slice(0, 3));
});
afterAll(async () => {
  await Promise.all([v4?.close(), v6?.close(), proxied?.close()]);
});

const body = { knowledgeIds: ["kb_handbook"], text: "How many days off do I get each year?", minSimilarity: 0.5 };
const search = (r: Running, token: string | undefined, b: unknown = body, headers: Record<string, string> = {}) =>
  call(r.url, "/v1/rag/search", { ...(token ? { token } : {}), body: b, headers });

function expectError(r: Awaited<ReturnType<typeof search>>, status: number, message: RegExp) {
  expect(r.status).toBe(status);
  expect(r.body.code).toBe(status);
  expect(r.body.data).toBeNull();
  expect(r.body.message).toMatch(message);
}

describe("search key authentication", () => {
  it("accepts a key by its hash and searches", async () => {
    const r = await search(v4, "key-scoped");
    expect(r.status).toBe(200);
    expect((r.body.data as { docsId: string }[])[0]?.docsId).toBe("vacation-policy");
  });

  it("accepts a user-supplied key by its HMAC under the verifier key, and not by a search without that key", async () => {
    expect((await search(v4, "hunter2")).status).toBe(200);
    expectError(await search(v6, "hunter2"), 401, /authentication failed/);
  });

  it("401 for a missing, malformed or unknown key", async () => {
    expectError(await search(v4, undefined), 401, /authentication failed/);
    expectError(await search(v4, "nope"), 401, /authentication failed/);
    expectError(
      await search(v4, undefined, body, { authorization: "Basic a2V5LXNjb3BlZA==" }),
      401,
      /authentication failed/,
    );
  });

  it("401 before validFrom, from validUntil and from status.expiresAt; 200 inside the window", async () => {
    expectError(await search(v4, "key-future"), 401, /expired/);
    expectError(await search(v4, "key-ended"), 401, /expired/);
    expectError(await search(v4, "key-expired-status"), 401, /expired/);
    expect((await search(v4, "key-window")).status).toBe(200);
  });

  it("accepts a previous key during its rotation overlap only", async () => {
    expect((await search(v4, "key-rotated-new")).status).toBe(200);
    expect((await search(v4, "key-rotated-old")).status).toBe(200);
    expectError(await search(v4, "key-rotated-older"), 401, /authentication failed/);
  });

  it("400 for a knowledge base outside the scope or that does not exist, without telling which", async () => {
    const outside = await search(v4, "key-scoped", { ...body, knowledgeIds: ["kb_handbook", "kb_secret"] });
    expectError(outside, 400, /knowledge id is invalid or permissions are insufficient/);
    const missing = await search(v4, "key-other", { ...body, knowledgeIds: ["kb_other"] });
    expectError(missing, 400, /knowledge id is invalid or permissions are insufficient/);
    // Same answer whether the knowledge base exists elsewhere or not at all.
    const nowhere = await search(v4, "key-scoped", { ...body, knowledgeIds: ["kb_nowhere"] });
    expect(outside.body.message.replace("kb_secret", "X")).toBe(nowhere.body.message.replace("kb_nowhere", "X"));
  });

  it("lets the internal token search its namespace's knowledge bases on the internal port", async () => {
    const internal = { ...v4, url: v4.internalUrl };
    const r = await search(internal, INTERNAL_TOKEN, { ...body, knowledgeIds: ["kb_handbook", "kb_secret"] });
    expect(r.status).toBe(200);
    expectError(
      await search(internal, INTERNAL_TOKEN, { ...body, knowledgeIds: ["kb_nowhere"] }),
      400,
      /knowledge id is invalid/,
    );
    // A SearchKey is no internal credential: the internal port takes the internal token only.
    expectError(await search(internal, "key-scoped"), 401, /internal token/);
  });

  it("refuses the internal token on the public port, as any unknown key (a leaked token is no key from outside)", async () => {
    for (const path of ["/v1/rag/search", "/v1/rag/search/batch"]) {
      const b = path.endsWith("batch") ? { queries: [body] } : body;
      const r = await call(v4.url, path, {
        token: INTERNAL_TOKEN,
        body: b,
        headers: { "x-capstan-namespace": "default" },
      });
      expectError(r, 401, /authentication failed: key missing, invalid or expired/);
    }
    // Nor does it reach the documents API under the public prefix.
    const docs = await call(v4.url, "/v1/knowledge-bases/kb_handbook/documents", {
      method: "GET",
      token: INTERNAL_TOKEN,
    });
    expectError(docs, 401, /authentication failed/);
  });
});

describe("IP allow-lists", () => {
  it("IPv4: the socket address must be in the list", async () => {
    expect((await search(v4, "key-v4-ok")).status).toBe(200);
    expectError(await search(v4, "key-v4-no"), 403, /not allowed/);
  });

  it("IPv6: the socket address ::1 is matched against IPv6 ranges", async () => {
    expect((await search(v6, "key-v6-ok")).status).toBe(200);
    expectError(await search(v6, "key-v6-no"), 403, /not allowed/);
    expectError(await search(v6, "key-v4-ok"), 403, /not allowed/);
  });

  it("ignores X-Forwarded-For from a peer that is not a trusted proxy", async () => {
    expectError(await search(v4, "key-proxied", body, { "x-forwarded-for": "203.0.113.5" }), 403, /not allowed/);
  });

  it("honours X-Forwarded-For (IPv4 and IPv6) from a trusted proxy, read from the right", async () => {
    expect((await search(proxied, "key-proxied", body, { "x-forwarded-for": "203.0.113.5" })).status).toBe(200);
    expect((await search(proxied, "key-proxied", body, { "x-forwarded-for": "2001:db8::42" })).status).toBe(200);
    // A forged first hop does not help: the hop the proxy appended is the client.
    const forged = await search(proxied, "key-proxied", body, { "x-forwarded-for": "203.0.113.5, 198.51.100.7" });
    expectError(forged, 403, /not allowed/);
    expectError(await search(proxied, "key-proxied", body, { "x-forwarded-for": "garbage" }), 403, /not allowed/);
    // Without the header the proxy itself (127.0.0.1) is the client.
    expectError(await search(proxied, "key-proxied"), 403, /not allowed/);
  });
});

describe("error envelopes", () => {
  it.each([
    [{ knowledgeIds: [], text: "x" }, /knowledgeIds: must list at least one/],
    [{ knowledgeIds: ["handbook"], text: "x" }, /knowledgeIds\[0\]: must be a knowledge id/],
    [{ knowledgeIds: "kb_handbook", text: "x" }, /knowledgeIds/],
    [{ knowledgeIds: ["kb_handbook"] }, /text: is required/],
    [{ knowledgeIds: ["kb_handbook"], text: "   " }, /text: must be a non-empty string/],
    [{ knowledgeIds: ["kb_handbook"], text: 42 }, /text/],
    [{ knowledgeIds: ["kb_handbook"], text: "x", maxResults: 0 }, /maxResults: must be at least 1/],
    [{ knowledgeIds: ["kb_handbook"], text: "x", maxResults: 101 }, /maxResults: must be at most 100/],
    [{ knowledgeIds: ["kb_handbook"], text: "x", maxResults: 2.5 }, /maxResults: must be an integer/],
    [{ knowledgeIds: ["kb_handbook"], text: "x", minSimilarity: 1.5 }, /minSimilarity: must be within 0..1/],
    [{ knowledgeIds: ["kb_handbook"], text: "x", minSimilarity: "high" }, /minSimilarity/],
    [[1, 2], /body: must be a JSON object/],
  ])("400 naming the field for %j", async (b, message) => {
    expectError(await search(v4, "key-scoped", b), 400, message);
  });

  it("400 for invalid JSON, 415 for another content type, 413 for a huge body, 404 elsewhere", async () => {
    expectError(await call(v4.url, "/v1/rag/search", { token: "key-scoped", raw: "{nope" }), 400, /not valid JSON/);
    const xml = await fetch(`${v4.url}/v1/rag/search`, {
      method: "POST",
      headers: { authorization: "Bearer key-scoped", "content-type": "application/xml" },
      body: "<q/>",
    });
    expect(xml.status).toBe(415);
    expect(await xml.json()).toMatchObject({ code: 415, data: null });
    const huge = await call(v4.url, "/v1/rag/search", {
      token: "key-scoped",
      body: { ...body, text: "x".repeat(2_000_000) },
    });
    expectError(huge, 413, /too large/);
    expectError(await call(v4.url, "/v1/rag/nothing", { token: "key-scoped", body }), 404, /not found/);
  });

  it("415 naming the received and the accepted type for a text/plain body (not a 400)", async () => {
    const res = await fetch(`${v4.url}/v1/rag/search`, {
      method: "POST",
      headers: { authorization: "Bearer key-scoped", "content-type": "text/plain" },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(415);
    const json = (await res.json()) as { code: number; message: string };
    expect(json.code).toBe(415);
    expect(json.message).toContain("'text/plain'");
    expect(json.message).toContain("application/json");
  });

  it("405 with Allow for a known path and the wrong method", async () => {
    const res = await fetch(`${v4.url}/v1/rag/search`, { headers: { authorization: "Bearer key-scoped" } });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    expect(res.headers.get("x-capstan-error")).toBe("SEARCH_ERR_METHOD");
    expect(await res.json()).toMatchObject({ code: 405, data: null, message: expect.stringMatching(/GET .*use POST/) });
  });

  it("carries the registry code in x-capstan-error and never a 500", async () => {
    const r = await search(v4, "key-scoped", { ...body, knowledgeIds: ["kb_secret"] });
    expect(r.headers.get("x-capstan-error")).toBe("SEARCH_ERR_KNOWLEDGE_ID");
    const metrics = await (await fetch(`${v4.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/capstan_search_errors_total\{code="SEARCH_ERR_KNOWLEDGE_ID"/);
    expect(metrics).not.toMatch(/status="500"/);
  });
});
