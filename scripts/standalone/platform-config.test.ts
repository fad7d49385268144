import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "@capstan/shared";
import { ScraperClient } from "@capstan/shared/clients/scraper-client";
import { describe, expect, it } from "vitest";
import { loadPlatformConfig, scrapingPlan } from "./platform-config.ts";

const local = { url: "http://127.0.0.1:3002", off: false };

function file(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "capstan-platform-")), "capstan.yaml");
  writeFileSync(path, text);
  return path;
}

describe("the platform configuration file of standalone mode", () => {
  it("without a file: the reference's defaults, the launcher's own scraper started without a key", () => {
    const plan = scrapingPlan(loadPlatformConfig(undefined), local);
    expect(plan.startLocal).toBe(true);
    expect(plan.localEnv).toEqual({});
    const client = new ScraperClient(plan.client);
    expect(client.settings).toEqual({ enabled: true, url: "http://127.0.0.1:3002", timeout: 30, max_retries: 3 });
    expect(plan.summary).toBe("Scraping: http://127.0.0.1:3002 (started here; timeout 30 s, 3 retries, no API key)");
  });

  it("takes the reference's keys: url elsewhere (nothing started here), timeout, max_retries, api_key", () => {
    const config = loadPlatformConfig(
      file("scraping:\n  url: http://scraper.internal:3002\n  timeout: 12\n  max_retries: 1\n  api_key: k-123\n"),
    );
    const plan = scrapingPlan(config, local);
    expect(plan.startLocal).toBe(false);
    expect(new ScraperClient(plan.client).settings).toEqual({
      enabled: true,
      url: "http://scraper.internal:3002",
      timeout: 12,
      max_retries: 1,
      api_key: "k-123",
    });
    expect(plan.summary).toContain("(external; timeout 12 s, 1 retries, API key set)");
    expect(plan.summary).not.toContain("k-123");
  });

  it("an api_key for the launcher's own scraper turns its auth on with that key", () => {
    const plan = scrapingPlan(loadPlatformConfig(file("scraping: {api_key: local-key-0123456789}\n")), local);
    expect(plan.startLocal).toBe(true);
    expect(plan.localEnv).toEqual({ API_KEY: "local-key-0123456789", AUTH_ENABLED: "true" });
    expect(plan.client).toMatchObject({ url: local.url, api_key: "local-key-0123456789" });
  });

  it("enabled: false uses no scraper at all; CAPSTAN_SCRAPER=off keeps the local one stopped", () => {
    const off = scrapingPlan(loadPlatformConfig(file("scraping:\n  enabled: false\n")), local);
    expect(off).toMatchObject({ startLocal: false, client: undefined });
    expect(off.summary).toMatch(/disabled/);
    const noLocal = scrapingPlan(loadPlatformConfig(undefined), { ...local, off: true });
    expect(noLocal).toMatchObject({ startLocal: false, client: undefined });
  });

  it("refuses an unknown key, naming it and the nearest valid one", () => {
    expect(() => loadPlatformConfig(file("scraping:\n  max_retry: 2\n"))).toThrow(ConfigError);
    expect(() => loadPlatformConfig(file("scraping:\n  max_retry: 2\n"))).toThrow(
      /scraping\.max_retry: unknown key \(did you mean scraping\.max_retries\?\)/,
    );
    expect(() => loadPlatformConfig(file("scrapping:\n  enabled: true\n"))).toThrow(/did you mean scraping\?/);
    expect(() => loadPlatformConfig(file("scraping:\n  timeout: 0\n"))).toThrow(/scraping\.timeout/);
  });
});
