// The operator's error registry: one code per failure, a message template, and the condition
// reason it surfaces as in status. Messages never carry key material. Templates use the shared
// {name} syntax (renderMessage).
import { defineErrors, renderMessage } from "@capstan/shared";

export const ERRORS = defineErrors({
  SCRAPER_NOT_FOUND: { message: "Scraper {name} does not exist", reason: "ScraperNotFound" },
  SCRAPING_DISABLED: { message: "scraping is disabled for {name}", reason: "ScrapingDisabled" },
  SCRAPE_FAILED: { message: "scraping {url} through {via} failed: {detail}", reason: "ScrapeFailed" },
  CRAWL_FAILED: { message: "crawling {url} through {via} failed: {detail}", reason: "CrawlFailed" },
  CRAWL_INCOMPLETE: {
    message:
      "{failed} of {attempted} pages crawled from {url} through {via} could not be fetched (the crawl's errors say why); " +
      "their documents are kept, the rest were written, and the source is retried",
    reason: "CrawlIncomplete",
  },
  CONFIG_MAP_NOT_FOUND: { message: "ConfigMap {name} does not exist", reason: "ConfigMapNotFound" },
  CONFIG_MAP_KEY_NOT_FOUND: { message: "ConfigMap {name} has no key {key}", reason: "ConfigMapKeyNotFound" },
  LEASE_LOST: { message: "leadership lost: {detail}", reason: "LeaseLost" },
} as const);

export type ErrorCode = keyof typeof ERRORS;

export class OperatorError extends Error {
  readonly code: ErrorCode;
  readonly reason: string;
  readonly params: Record<string, string | number>;
  constructor(code: ErrorCode, params: Record<string, string | number> = {}) {
    const def = ERRORS[code];
    super(renderMessage(def.message, params));
    this.name = "OperatorError";
    this.code = code;
    this.reason = def.reason;
    this.params = params;
  }
}
