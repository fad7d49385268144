import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadOperatorConfig, platformScraperVia, VERSION } from "./config.ts";

describe("the release version", () => {
  it("is the chart's appVersion: the operator's default image tags are the chart's", () => {
    const chart = readFileSync(new URL("../../charts/capstan/Chart.yaml", import.meta.url), "utf8");
    expect(chart).toMatch(new RegExp(`^appVersion: "${VERSION.replaceAll(".", "\\.")}"$`, "m"));
  });
});

const config = (overrides: Record<string, unknown>) =>
  loadOperatorConfig({}, { namespace: "capstan-system", leaderElection: { enabled: false }, ...overrides });

describe("the scraper a KnowledgeBase without scraperRef goes through, as status names it", () => {
  it("is the chart's platform Scraper with its namespace and Service url by default", () => {
    expect(platformScraperVia(config({}))).toBe(
      "the platform Scraper capstan-system/capstan-scraper (http://capstan-scraper.capstan-system.svc:3002)",
    );
    expect(platformScraperVia(config({ platformScraper: "docs-scraper" }))).toContain(
      "the platform Scraper capstan-system/docs-scraper (http://docs-scraper.capstan-system.svc:3002)",
    );
  });

  it("is the configured url when scraping.url replaces the platform Scraper", () => {
    expect(platformScraperVia(config({ scraping: { url: "http://scraper.example:3002" } }))).toBe(
      "the platform scraping url http://scraper.example:3002",
    );
  });
});
