// The scraper process (src/main.ts) with the reference's own example, API_KEY=secret
// AUTH_ENABLED=true: it starts, says the key is short, and requires exactly that key. The API
// role alone needs no browser; its rendering service is simply not there.
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";
import { post } from "./helpers.ts";

const MAIN = fileURLToPath(new URL("../../services/scraper/src/main.ts", import.meta.url));
const running: ManagedProcess[] = [];

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
});

describe("the scraper process", () => {
  it("starts with API_KEY=secret AUTH_ENABLED=true, warns that the key is short, and requires it", async () => {
    const port = await freePort();
    const renderPort = await freePort();
    const adminPort = await freePort();
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("CAPSTAN_")));
    const proc = startProcess("scraper", process.execPath, [MAIN], {
      ...clean,
      SCRAPER_ROLE: "api",
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      HOST: "127.0.0.1",
      RENDER_URL: `http://127.0.0.1:${renderPort}`,
      API_KEY: "secret",
      AUTH_ENABLED: "true",
      OTEL_SDK_DISABLED: "true",
    });
    running.push(proc);
    const url = `http://127.0.0.1:${port}`;
    await waitFor("scraper listening", async () => (await fetch(`${url}/health`)).status === 200, {
      timeoutMs: 60_000,
      proc,
    });
    // Metrics and health on the admin port only, no key there; 404 on the API's port, key or not.
    const admin = `http://127.0.0.1:${adminPort}`;
    expect((await fetch(`${admin}/metrics`)).status).toBe(200);
    expect((await fetch(`${admin}/healthz`)).status).toBe(200);
    for (const headers of [{}, { authorization: "Bearer secret" }] as Record<string, string>[]) {
      expect((await fetch(`${url}/metrics`, { headers })).status).toBe(404);
    }
    expect(proc.output()).toContain("API_KEY is shorter than 16 characters");
    expect(proc.output()).not.toContain('"secret"');
    const target = { url: "http://127.0.0.1:9/" };
    expect((await post(url, "/scrape", target)).status).toBe(401);
    expect((await post(url, "/scrape", target, { authorization: "Bearer wrong" })).status).toBe(401);
    // Past authentication: the SSRF guard answers (the loopback target is not allowed).
    const authorised = await post(url, "/scrape", target, { authorization: "Bearer secret" });
    expect(authorised.status).toBe(403);
  });
});
