/// <reference lib="dom" />
// The test ground's other real servers: Redis from the Debian package and headless Chromium.
import { createServer, type Server } from "node:http";
import { Redis } from "ioredis";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launchChromium } from "../ground/chromium.ts";
import { startRedis } from "../ground/redis.ts";

describe("Redis", () => {
  it("round-trips a value through the harness Redis", async () => {
    const redis = new Redis(inject("redisUrl"), { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    const key = `ground:${Date.now()}:${Math.random()}`;
    await redis.set(key, "ahoy", "EX", 60);
    expect(await redis.get(key)).toBe("ahoy");
    expect(await redis.incrby(`${key}:n`, 41)).toBe(41);
    expect(await redis.incr(`${key}:n`)).toBe(42);
    await redis.quit();
  });

  it("starts a private instance that can be stopped (for outage tests)", async () => {
    const own = await startRedis();
    const redis = new Redis(own.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    await redis.connect();
    expect(await redis.ping()).toBe("PONG");
    await own.stop();
    await expect(redis.ping()).rejects.toThrow();
    redis.disconnect();
  });
});

describe("Chromium", () => {
  let browser: Browser;
  let server: Server;
  let url: string;

  beforeAll(async () => {
    browser = await launchChromium();
    server = createServer((_req, res) => {
      res.setHeader("content-type", "text/html");
      res.end(`<!doctype html><title>Ground</title><div id="out">static</div>
        <script>setTimeout(() => { document.getElementById("out").textContent = "rendered by script"; }, 50)</script>`);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const addr = server.address();
    url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}/`;
  });

  afterAll(async () => {
    await browser?.close();
    server?.close();
  });

  it("renders a loopback page, runs its script and takes a PNG screenshot", async () => {
    const page = await browser.newPage({ viewport: { width: 640, height: 360 } });
    await page.goto(url);
    await page.waitForFunction(() => document.getElementById("out")?.textContent === "rendered by script");
    expect(await page.title()).toBe("Ground");
    const png = await page.screenshot();
    expect(png.subarray(1, 4).toString()).toBe("PNG");
    expect(png.readUInt32BE(16)).toBe(640); // IHDR width
    expect(png.readUInt32BE(20)).toBe(360); // IHDR height
    await page.close();
  });
});
