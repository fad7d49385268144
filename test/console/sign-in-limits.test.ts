// What an unauthenticated client can make the console do: sign-in attempts are limited per client
// address (429 with Retry-After past CAPSTAN_CONSOLE_SIGN_IN_PER_MINUTE, each address counted on
// its own), no body over 64 KiB is read before a session exists (the sign-in once took 8 MiB),
// and /metrics, /healthz and /readyz answer on the internal port only. The console runs in
// standalone mode here (the admin token file is the identity), over real sockets.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildApp, loadConsoleConfig } from "@capstan/console";
import { createLogger, createRegistry, listenInternal } from "@capstan/shared";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spellings } from "../../services/shared/src/http.fixture.ts";
import { rawRequest } from "../ground/raw-http.ts";

const ADMIN_TOKEN = "console-admin-token-for-limits-0123456789";
const PER_MINUTE = 5;
let dir: string;
let app: FastifyInstance;
let url: string;
let internalUrl: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "capstan-console-limits-"));
  for (const d of ["resources", "state"]) mkdirSync(join(dir, d));
  writeFileSync(join(dir, "admin-token"), ADMIN_TOKEN);
  const config = loadConsoleConfig(
    {
      standaloneResourcesDir: join(dir, "resources"),
      standaloneStateDir: join(dir, "state"),
      adminTokenFile: join(dir, "admin-token"),
      assetsDir: join(dir, "no-assets"),
      signInPerMinute: PER_MINUTE,
      // Loopback is the proxy here: X-Forwarded-For names each test client's address.
      trustedProxies: ["127.0.0.1/32"],
    },
    {},
  );
  app = await buildApp(config, {
    logger: createLogger({ name: "console", level: "silent" }),
    registry: createRegistry({ defaultMetrics: false }),
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  internalUrl = `http://127.0.0.1:${((await listenInternal(app, { port: 0, host: "127.0.0.1" })).address() as { port: number }).port}`;
});

afterAll(async () => {
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const signIn = (token: string, from: string) =>
  rawRequest(url, "/api/session", {
    method: "POST",
    headers: { "x-forwarded-for": from },
    body: JSON.stringify({ token }),
  });

describe("the console's sign-in", () => {
  it(`takes ${PER_MINUTE} attempts a minute per client address, then answers 429 with Retry-After`, async () => {
    const from = "203.0.113.7";
    for (let i = 0; i < PER_MINUTE; i++) expect((await signIn(`wrong-${i}`, from)).status).toBe(401);
    const res = await rawRequest(url, "/api/session", {
      method: "POST",
      headers: { "x-forwarded-for": from },
      body: JSON.stringify({ token: ADMIN_TOKEN }),
    });
    // Even the right token: the limit counts attempts, before the token is looked at.
    expect(res.status).toBe(429);
    expect(JSON.parse(res.body)).toEqual({
      error: { code: "TooManySignIns", message: expect.stringMatching(/more than 5 sign-in attempts a minute/) },
    });
    expect(res.body).not.toContain(ADMIN_TOKEN);
    // Another address is counted on its own, and signs in.
    expect((await signIn(ADMIN_TOKEN, "203.0.113.8")).status).toBe(200);
  });

  it("reads no body over 64 KiB before a session exists (sign-in, and every other route)", async () => {
    const big = JSON.stringify({ token: "x".repeat(1024 * 1024) });
    const res = await rawRequest(url, "/api/session", {
      method: "POST",
      headers: { "x-forwarded-for": "198.51.100.1" },
      body: big,
    });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toMatchObject({
      error: { code: "TooLarge", message: expect.stringContaining("64 KiB") },
    });
    const other = await rawRequest(url, "/api/namespaces/default/accesschannels", {
      method: "POST",
      body: JSON.stringify({ displayName: "y".repeat(100 * 1024) }),
    });
    expect(other.status).toBe(413);
  });

  it("serves /metrics, /healthz and /readyz on the internal port only, however the path is spelt", async () => {
    for (const path of ["/metrics", "/healthz", "/readyz"]) {
      for (const spelt of spellings(path)) {
        const res = await rawRequest(url, spelt);
        expect(res.status, spelt).toBe(404);
        expect(res.body).not.toContain("http_requests_total");
      }
      expect((await rawRequest(internalUrl, path)).status, path).toBe(200);
    }
    expect((await rawRequest(internalUrl, "/metrics")).body).toContain("capstan_console_http_requests_total");
    // and the internal port serves nothing of the page's API
    expect((await rawRequest(internalUrl, "/api/session", { method: "POST", body: "{}" })).status).toBe(404);
  });
});
