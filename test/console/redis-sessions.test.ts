// The console as two replicas sharing the test ground's Redis (what the chart runs): a user signed
// in on one is signed in on the other, a sign-out on either ends the session on both, and Redis
// holds nothing that opens a session without the browser's cookie: no token, no CSRF token in
// clear, and a cookie with the right id but another secret is refused. Real Redis, real API server.
import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { tokenWithRoles } from "../ground/console-users.ts";
import { ensureNamespace, harnessKubeClient } from "../ground/kube-client.ts";
import { type RunningConsole, startConsole } from "./helpers.ts";

const ns = `console-sessions-${process.pid}`;
const COOKIE = "capstan_console_session";
let a: RunningConsole;
let b: RunningConsole;
let token: string;
let redis: Redis;

beforeAll(async () => {
  const admin = harnessKubeClient();
  await ensureNamespace(admin, ns);
  token = await tokenWithRoles(admin, ns, "viewer", ["viewer"]);
  const settings = { defaultNamespace: ns, redisUrl: inject("redisUrl"), secureCookies: false };
  [a, b] = await Promise.all([
    startConsole(inject("kubeconfig"), settings),
    startConsole(inject("kubeconfig"), settings),
  ]);
  redis = new Redis(inject("redisUrl"));
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  redis?.disconnect();
});

/** Signs in on one replica; returns the session cookie's value and the CSRF token. */
async function signIn(on: RunningConsole): Promise<{ cookie: string; csrf: string }> {
  const res = await fetch(`${on.url}/api/session`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
  expect(res.status).toBe(200);
  const set = res.headers.get("set-cookie") ?? "";
  const cookie = decodeURIComponent(/capstan_console_session=([^;]+)/.exec(set)?.[1] ?? "");
  return { cookie, csrf: ((await res.json()) as { csrfToken: string }).csrfToken };
}

const session = (on: RunningConsole, cookie: string) =>
  fetch(`${on.url}/api/session`, { headers: { cookie: `${COOKIE}=${encodeURIComponent(cookie)}` } });

describe("console sessions in Redis", () => {
  it("a session begun on one replica serves on the other, and the user's API calls work there", async () => {
    const { cookie, csrf } = await signIn(a);
    const res = await session(b, cookie);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { user: { username: string }; csrfToken: string };
    expect(body.user.username).toBe(`system:serviceaccount:${ns}:viewer`);
    expect(body.csrfToken).toBe(csrf);
    // The other replica built the user's client from the sealed token: RBAC answers for the user.
    const perms = await fetch(`${b.url}/api/namespaces/${ns}/permissions`, {
      headers: { cookie: `${COOKIE}=${encodeURIComponent(cookie)}` },
    });
    expect(perms.status).toBe(200);
    const p = (await perms.json()) as Record<string, Record<string, boolean>>;
    expect(p.accesschannels?.list).toBe(true);
    expect(p.accesschannels?.create).toBe(false);
  });

  it("keeps neither the token nor the CSRF token readable in Redis, and refuses a cookie with another secret", async () => {
    const { cookie, csrf } = await signIn(a);
    const [id, secret] = cookie.split(".") as [string, string];
    const stored = await redis.getBuffer(`capstan:console:session:{${id}}`);
    expect(stored).not.toBeNull();
    const text = (stored as Buffer).toString("latin1");
    for (const s of [token, csrf, secret, token.slice(10, 40)]) expect(text).not.toContain(s);
    const ttl = await redis.pttl(`capstan:console:session:{${id}}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(1800_000);
    // The same id with another secret (right length) opens nothing, on either replica.
    const forged = `${id}.${createHash("sha256").update("guess").digest("base64url")}`;
    expect((await session(a, forged)).status).toBe(401);
    expect((await session(b, forged)).status).toBe(401);
    // ... nor can it end the session.
    await fetch(`${b.url}/api/session`, {
      method: "DELETE",
      headers: { cookie: `${COOKIE}=${encodeURIComponent(forged)}`, "x-csrf-token": csrf },
    });
    expect((await session(a, cookie)).status).toBe(200);
  });

  it("a sign-out on one replica ends the session on both", async () => {
    const { cookie, csrf } = await signIn(a);
    expect((await session(b, cookie)).status).toBe(200);
    const out = await fetch(`${b.url}/api/session`, {
      method: "DELETE",
      headers: { cookie: `${COOKIE}=${encodeURIComponent(cookie)}`, "x-csrf-token": csrf },
    });
    expect(out.status).toBe(200);
    expect((await session(a, cookie)).status).toBe(401);
    expect((await session(b, cookie)).status).toBe(401);
    const [id] = cookie.split(".");
    expect(await redis.exists(`capstan:console:session:{${id}}`)).toBe(0);
  });
});
