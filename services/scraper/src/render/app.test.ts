// Who may render through the rendering service's port (no browser is started: the check runs
// before any rendering).
import { afterEach, describe, expect, it } from "vitest";
import { scraperConfig } from "../config.ts";
import { buildRenderService, isLoopback, type RenderService } from "./app.ts";

let service: RenderService | undefined;
afterEach(async () => {
  await service?.app.close();
  service = undefined;
});

const render = (remoteAddress: string, headers: Record<string, string> = {}) =>
  service?.app.inject({ method: "POST", url: "/scrape", remoteAddress, headers, payload: { url: 42 } });

describe("POST /scrape on the rendering service", () => {
  it("without an API key, answers only callers on this host", async () => {
    service = buildRenderService(scraperConfig({ logLevel: "silent" }));
    expect((await render("10.1.2.3"))?.statusCode).toBe(401);
    expect((await render("::ffff:10.1.2.3"))?.statusCode).toBe(401);
    // Past the check, the bad body is the answer.
    expect((await render("127.0.0.1"))?.statusCode).toBe(400);
    expect((await render("::1"))?.statusCode).toBe(400);
  });

  it("with an API key, needs that key from every caller, loopback included", async () => {
    service = buildRenderService(scraperConfig({ logLevel: "silent", apiKey: "secret", authEnabled: true }));
    expect((await render("127.0.0.1"))?.statusCode).toBe(401);
    expect((await render("10.1.2.3", { authorization: "Bearer secret" }))?.statusCode).toBe(400);
  });

  it("refuses a malformed body with 400 in the scraper's error shape, naming the field", async () => {
    service = buildRenderService(scraperConfig({ logLevel: "silent" }));
    const res = await render("127.0.0.1");
    expect(res?.statusCode).toBe(400);
    expect(res?.json()).toMatchObject({ success: false, code: "BAD_REQUEST", error: expect.stringContaining("url") });
    const extra = await service.app.inject({
      method: "POST",
      url: "/scrape",
      remoteAddress: "127.0.0.1",
      payload: { url: "https://example.com/", wait_after_load: -1, surprise: true },
    });
    expect(extra.statusCode).toBe(400);
    expect(extra.json().code).toBe("BAD_REQUEST");
  });

  it("knows loopback addresses", () => {
    expect(["127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1"].every(isLoopback)).toBe(true);
    expect(["10.0.0.1", "::ffff:10.0.0.1", "198.18.0.5", "", undefined].some(isLoopback)).toBe(false);
  });
});
