// One scrape, start to end: URL check and SSRF pre-check, a worker slot (bounded queue), the
// render, then markdown, metadata, extractors and the optional LLM extraction, shaped by
// `formats` when asked (formats.ts). Used by /scrape, each URL of /scrape/bulk and /search, and
// each page of a crawl, a batch scrape or a map's start page (src/crawl/).
import type { Logger } from "@capstan/shared";
import { tracer, withSpan } from "@capstan/shared";
import { documentToMarkdown } from "@capstan/shared/documents/html";
import { load } from "cheerio";
import type { ScraperConfig } from "../config.ts";
import { type ExtractedValue, type ExtractorSpec, runExtractors, validateExtractors } from "../content/extractors.ts";
import { extractMetadata, type PageMetadata } from "../content/metadata.ts";
import { isScraperError, ScraperError } from "../errors.ts";
import type { Limiter } from "../limiter.ts";
import type { ApiMetrics } from "../metrics.ts";
import { parseTargetUrl, type SsrfGuard } from "../ssrf/guard.ts";
import { type Format, formatFields, pageLinks, wantsScreenshot } from "./formats.ts";
import type { LlmClient } from "./llm.ts";
import type { RenderClient } from "./render-client.ts";
import type { PageOptions } from "./schemas.ts";

/** Without `formats`, markdown, html and screenshot are always there (reference 2.10); with it, only those asked for. */
export interface ScrapeData {
  markdown?: string;
  html?: string | null;
  rawHtml?: string;
  links?: string[];
  /** Base64 PNG of the viewport (or the full page), null when not asked for; a data: URL with `formats`. */
  screenshot?: string | null;
  metadata: PageMetadata;
  /** Extractor results by name, present when extractors were given. */
  extracted?: Record<string, ExtractedValue>;
  /** LLM extraction result, present when extractorOptions.mode is "llm-extraction". */
  llm_extraction?: unknown;
}

export interface ScrapeInput {
  url: string;
  pageOptions: PageOptions;
  extractors?: Record<string, ExtractorSpec> | undefined;
  /** Firecrawl v1 formats (formats.ts); absent: the reference's answer. */
  formats?: Format[] | undefined;
  extractorOptions?: { mode: "llm-extraction"; extractionPrompt?: string | undefined; extractionSchema?: unknown };
}

export interface ScrapeServiceDeps {
  config: ScraperConfig;
  guard: SsrfGuard;
  limiter: Limiter;
  renderClient: RenderClient;
  llm: LlmClient;
  metrics: ApiMetrics;
  logger: Logger;
}

const t = tracer("capstan-scraper");

function targetForLog(raw: string): string {
  try {
    const u = new URL(raw);
    return `${u.origin}${u.pathname}`.slice(0, 300);
  } catch {
    return "(invalid url)";
  }
}

export class ScrapeService {
  private readonly deps: ScrapeServiceDeps;

  constructor(deps: ScrapeServiceDeps) {
    this.deps = deps;
  }

  /** Checks what can be checked before queueing: URL syntax, selectors, the SSRF policy. */
  async precheck(input: Pick<ScrapeInput, "url" | "extractors" | "extractorOptions">): Promise<URL> {
    const url = parseTargetUrl(input.url);
    if (input.extractors) validateExtractors(input.extractors);
    if (input.extractorOptions && !this.deps.llm.configured) {
      throw new ScraperError("FEATURE_DISABLED", ["LLM extraction (LLM_API_KEY or LOCAL_MODEL_BASE_URL)"]);
    }
    try {
      await this.deps.guard.check(url, "api");
    } catch (err) {
      if (isScraperError(err) && err.code === "BLOCKED_TARGET") this.deps.metrics.ssrfBlocked.inc();
      throw err;
    }
    return url;
  }

  /**
   * `bulk`: an URL of an admitted multi-URL request (its fan-out is bounded by the caller).
   * `links`: the page's links are wanted whatever the formats (a crawl follows them).
   */
  async scrape(
    input: ScrapeInput,
    opts: { signal?: AbortSignal; bulk?: boolean; links?: boolean } = {},
  ): Promise<ScrapeData> {
    const { config, metrics } = this.deps;
    const started = performance.now();
    let outcome = "ok";
    const deadline = AbortSignal.timeout(config.taskTimeoutMs);
    const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
    try {
      return await withSpan(t, "scrape", async (span) => {
        span.setAttribute("scraper.bulk", Boolean(opts.bulk));
        await this.precheck(input);
        span.setAttribute("url.full", input.url.slice(0, 2048));
        return await this.deps.limiter.run(
          async () => {
            metrics.inFlight.inc();
            try {
              return await this.renderAndConvert(input, signal, Boolean(opts.links));
            } finally {
              metrics.inFlight.dec();
            }
          },
          { signal, force: Boolean(opts.bulk) },
        );
      });
    } catch (err) {
      const error = this.translate(err, deadline);
      outcome = error.code;
      throw error;
    } finally {
      const seconds = (performance.now() - started) / 1000;
      metrics.duration.observe({ outcome }, seconds);
      // The query string may carry tokens: only origin and path are logged.
      this.deps.logger.info({ target: targetForLog(input.url), outcome, ms: Math.round(seconds * 1000) }, "scrape");
    }
  }

  private translate(err: unknown, deadline: AbortSignal): ScraperError {
    if (deadline.aborted && !(isScraperError(err) && err.code !== "TIMEOUT" && err.code !== "RENDERER_UNAVAILABLE")) {
      return new ScraperError("TIMEOUT", [this.deps.config.taskTimeoutMs, "TASK_TIMEOUT"]);
    }
    if (isScraperError(err)) return err;
    if ((err as Error).name === "AbortError" || (err as Error).name === "TimeoutError") {
      return new ScraperError("TIMEOUT", [this.deps.config.taskTimeoutMs, "cancelled"]);
    }
    this.deps.logger.error({ err }, "scrape failed unexpectedly");
    return new ScraperError("INTERNAL");
  }

  private async renderAndConvert(input: ScrapeInput, signal: AbortSignal, wantLinks: boolean): Promise<ScrapeData> {
    const { config } = this.deps;
    const po = input.pageOptions;
    const shot = input.formats
      ? wantsScreenshot(input.formats)
      : { screenshot: po.screenshot || po.fullPageScreenshot, fullPage: po.fullPageScreenshot };
    const timeout = Math.min(po.timeout ?? config.requestTimeoutMs, config.taskTimeoutMs);
    const rendered = await this.deps.renderClient.render(
      {
        url: input.url,
        wait_after_load: po.waitFor,
        timeout,
        screenshot: shot.screenshot,
        full_page_screenshot: shot.fullPage,
        ...(po.headers ? { headers: po.headers } : {}),
        ...(po.blockMedia !== undefined ? { block_media: po.blockMedia } : {}),
      },
      signal,
    );
    const $ = load(rendered.content);
    const metadata = extractMetadata($, {
      sourceURL: input.url,
      url: rendered.finalUrl,
      statusCode: rendered.pageStatusCode,
      contentType: rendered.contentType,
      error: rendered.pageError,
    });
    // One parse per page: extractors read the document before markdown conversion cleans it in place.
    const extracted = input.extractors ? runExtractors($, input.extractors, rendered.finalUrl) : undefined;
    const links = wantLinks || input.formats?.includes("links") ? pageLinks($, rendered.finalUrl) : undefined;
    const markdown = documentToMarkdown($, rendered.contentType, rendered.finalUrl, {
      onlyMainContent: po.onlyMainContent,
    });
    const data: ScrapeData = input.formats
      ? {
          ...formatFields(input.formats, {
            markdown,
            rawHtml: rendered.content,
            finalUrl: rendered.finalUrl,
            screenshot: rendered.screenshot,
            links,
            onlyMainContent: po.onlyMainContent,
          }),
          metadata,
        }
      : { markdown, html: po.includeHtml ? rendered.content : null, screenshot: rendered.screenshot, metadata };
    if (links && !data.links) data.links = links;
    if (extracted) data.extracted = extracted;
    if (input.extractorOptions?.mode === "llm-extraction") {
      data.llm_extraction = await this.deps.llm.extract(
        {
          markdown,
          prompt: input.extractorOptions.extractionPrompt,
          schema: input.extractorOptions.extractionSchema,
        },
        signal,
      );
    }
    return data;
  }
}
