// Fetching a page through a scraping component (reference 4.3: POST {scraper_url}/scrape), or a
// whole site through its crawl jobs (crawlPages, its pages handed to the caller as they come), with the platform's scraping settings (enabled,
// url, timeout, max_retries, api_key), through the shared ScraperClient; one client per distinct
// settings, reused across refreshes.
import type { OutboundMetrics } from "@capstan/shared";
import { type CrawlRequest, ScraperClient, ScraperClientError } from "@capstan/shared/clients/scraper-client";
import { type CrawlOptions, type CrawlResult, crawlPages } from "@capstan/shared/clients/scraper-crawl";
import { OperatorError } from "../errors.ts";

export interface ScrapeTarget {
  url: string;
  timeoutSeconds: number;
  maxRetries: number;
  apiKey?: string | undefined;
  /** Which Scraper this is, as status names it when a page cannot be fetched through it. */
  via: string;
}

export interface ScrapedText {
  markdown: string;
  title?: string;
}

export interface Scrape {
  scrape(
    target: ScrapeTarget,
    pageUrl: string,
    options: { waitFor?: number; onlyMainContent?: boolean },
  ): Promise<ScrapedText>;
  crawl(target: ScrapeTarget, request: CrawlRequest, options?: CrawlOptions): Promise<CrawlResult>;
}

function detailOf(err: unknown): string {
  const detail = err instanceof ScraperClientError ? `${err.code}: ${err.message}` : (err as Error).message;
  return detail.slice(0, 300);
}

export class ClientScrape implements Scrape {
  private readonly metrics: OutboundMetrics | undefined;
  private readonly clients = new Map<string, ScraperClient>();

  constructor(metrics?: OutboundMetrics) {
    this.metrics = metrics;
  }

  private client(t: ScrapeTarget): ScraperClient {
    const id = JSON.stringify([t.url, t.timeoutSeconds, t.maxRetries, t.apiKey ?? ""]);
    let c = this.clients.get(id);
    if (!c) {
      if (this.clients.size > 64) this.clients.clear();
      c = new ScraperClient(
        {
          url: t.url,
          timeout: t.timeoutSeconds,
          max_retries: t.maxRetries,
          ...(t.apiKey ? { api_key: t.apiKey } : {}),
        },
        this.metrics ? { metrics: this.metrics } : {},
      );
      this.clients.set(id, c);
    }
    return c;
  }

  async scrape(
    t: ScrapeTarget,
    pageUrl: string,
    options: { waitFor?: number; onlyMainContent?: boolean },
  ): Promise<ScrapedText> {
    try {
      const page = await this.client(t).scrape(pageUrl, { pageOptions: { ...options, screenshot: false } });
      return { markdown: page.markdown ?? "", ...(page.metadata?.title ? { title: page.metadata.title } : {}) };
    } catch (err) {
      throw new OperatorError("SCRAPE_FAILED", { url: pageUrl, via: t.via, detail: detailOf(err) });
    }
  }

  /** A crawl's failure is CRAWL_FAILED; an error of options.take (writing the pages) is passed on as it is. */
  async crawl(t: ScrapeTarget, request: CrawlRequest, options: CrawlOptions = {}): Promise<CrawlResult> {
    const take = options.take;
    let taking: { err: unknown } | undefined;
    const opts: CrawlOptions = take
      ? {
          ...options,
          take: (pages) =>
            take(pages).catch((err: unknown) => {
              taking = { err };
              throw err;
            }),
        }
      : options;
    try {
      return await crawlPages(this.client(t), request, opts);
    } catch (err) {
      if (taking) throw taking.err;
      throw new OperatorError("CRAWL_FAILED", { url: request.url, via: t.via, detail: detailOf(err) });
    }
  }
}
