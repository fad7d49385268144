import { describe, expect, it } from "vitest";
import { loadOperatorConfig, platformScraperVia } from "./config.ts";

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
