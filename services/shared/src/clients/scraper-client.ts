// The platform's client of a scraper (knowledge ingestion, content refresh). Settings are the
// platform configuration's "scraping" section (reference 8): enabled (default true), url
// (default http://127.0.0.1:3002), timeout in seconds (default 30), max_retries (default 3),
// api_key (Bearer, no default). Calls go through the shared resilience policy (timeout per
// attempt, bounded full-jitter retries, Retry-After honoured, metrics); retries happen only on
// timeouts, 5xx answers and refused/reset connections (a scraper restarting); 4xx answers are
// final. Errors are typed by status family. Every 2xx answer is parsed with its route's schema
// from scraper-wire.ts (the ones the scraper's routes serialise with); one that does not match is a
// ScraperMalformedAnswerError (MALFORMED_ANSWER) naming its first bad field, and is not retried.
import { Agent, type Dispatcher, fetch } from "undici";
import { z } from "zod";
import type { OutboundMetrics } from "../metrics.ts";
import { type Failure, OutboundPolicy } from "../resilience/policy.ts";
import { isRetryableNetworkCode, isRetryableStatus } from "../resilience/retryable.ts";
import {
  type bulkBodySchema,
  bulkEntrySchema,
  bulkResponseSchema,
  type crawlBodySchema,
  type extractorSpecSchema,
  jobCancelledSchema,
  jobStartedSchema,
  jobStatusSchema,
  type pageOptionsObject,
  type scrapeBodySchema,
  type scrapeDataSchema,
  scrapeResponseSchema,
} from "./scraper-wire.ts";

export const scrapingSettingsSchema = z.object({
  enabled: z.boolean().default(true),
  url: z.url({ protocol: /^https?$/ }).default("http://127.0.0.1:3002"),
  timeout: z.number().positive().max(600).default(30),
  max_retries: z.int().min(0).max(10).default(3),
  api_key: z.string().min(1).optional(),
});
export type ScrapingSettings = z.output<typeof scrapingSettingsSchema>;
export type ScrapingSettingsInput = z.input<typeof scrapingSettingsSchema>;

// What the client sends and reads is the scraper's wire (scraper-wire.ts), the schemas its routes
// validate and serialise with: the types below are theirs, and every answer is parsed with them.

/** POST /scrape's and /scrape/bulk's pageOptions, as sent (the scraper fills the defaults). */
export type ScrapePageOptions = z.input<typeof pageOptionsObject>;
export type ExtractorSpec = z.input<typeof extractorSpecSchema>;
/** One scraped page: POST /scrape's `data`, a bulk entry's, a crawl result. */
export type ScrapedPage = z.output<typeof scrapeDataSchema>;
/** A crawl job's request (the scraper's POST /crawl, Firecrawl v1 names). */
export type CrawlRequest = z.input<typeof crawlBodySchema>;
/** One answer of GET /crawl/{id}: progress and the results from `skip` on. */
export type CrawlStatus = z.output<typeof jobStatusSchema>;
/**
 * POST /scrape/bulk's answer as the client reads it: a failed entry's `code` may be one this
 * client does not know (a newer scraper's), so it is read as any string there. One entry is not
 * worth refusing the whole answer and its pages over. Everything else is the route's schema; a
 * job's status stays strict, since guessing whether an unknown status means "done" loses pages.
 */
const bulkAnswerSchema = bulkResponseSchema.extend({
  data: z.array(
    z.discriminatedUnion("success", [
      bulkEntrySchema.options[0],
      bulkEntrySchema.options[1].extend({ code: z.string().describe("A code of SCRAPER_ERROR_CODES, or a newer one") }),
    ]),
  ),
});
/** One URL of POST /scrape/bulk: its page, or its own error. */
export type BulkResult = z.output<typeof bulkAnswerSchema>["data"][number];
type ScrapeBody = z.input<typeof scrapeBodySchema>;
type BulkBody = z.input<typeof bulkBodySchema>;

/** GET /health: the client needs its status (the scraper's own schema lists the rest). */
const healthAnswerSchema = z.object({ status: z.string() }).loose();

export class ScraperClientError extends Error {
  readonly status: number | undefined;
  readonly code: string;
  /** The answer's Retry-After, honoured by the resilience policy. */
  retryAfter: string | undefined;
  constructor(message: string, code: string, status?: number) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
  }
}
export class ScraperDisabledError extends ScraperClientError {}
export class ScraperBadRequestError extends ScraperClientError {}
export class ScraperAuthError extends ScraperClientError {}
export class ScraperBlockedError extends ScraperClientError {}
export class ScraperTimeoutError extends ScraperClientError {}
export class ScraperUnavailableError extends ScraperClientError {}
/**
 * A 2xx answer that is not the scraper's wire (a field missing or of the wrong type: a scraper of
 * another version, or something else at its URL). Code MALFORMED_ANSWER; never retried, the same
 * question would get the same answer.
 */
export class ScraperMalformedAnswerError extends ScraperClientError {}

/** The first bad field of an answer, as "data.metadata.title: <what is wrong>". */
function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "not the expected shape";
  const path = issue.path.map(String).join(".");
  return `${path || "(the answer)"}: ${issue.message}`;
}

function errorFor(status: number, code: string, message: string): ScraperClientError {
  if (status === 400 || status === 413 || status === 415) return new ScraperBadRequestError(message, code, status);
  if (status === 401) return new ScraperAuthError(message, code, status);
  if (status === 403) return new ScraperBlockedError(message, code, status);
  // 408: the scraper's own answer to a timeout (as Firecrawl's); 504: an older scraper's, or a
  // proxy's between the two.
  if (status === 408 || status === 504) return new ScraperTimeoutError(message, code, status);
  if (status >= 500) return new ScraperUnavailableError(message, code, status);
  return new ScraperClientError(message, code, status);
}

/** How the resilience policy sees a failed attempt. */
function classify(err: unknown): Failure {
  if (!(err instanceof ScraperClientError)) return { retry: false, outcome: "error" };
  // A malformed answer is final: asked again, the scraper would answer the same.
  if (err instanceof ScraperMalformedAnswerError) return { retry: false, outcome: "malformed_answer" };
  const retry =
    err instanceof ScraperTimeoutError ||
    (err.status !== undefined ? isRetryableStatus(err.status) : isRetryableNetworkCode(err.code));
  return { retry, outcome: err.code.toLowerCase(), retryAfter: err.retryAfter };
}

/** The scraper is away for now (unreachable, restarting, 5xx, timed out): the same failure asked again may succeed. */
export function scraperAway(err: unknown): boolean {
  return classify(err).retry;
}

export interface ScraperClientOptions {
  metrics?: OutboundMetrics;
  dispatcher?: Dispatcher;
  /** Backoff base in ms (default 500); retry n waits up to base·2^(n-1), capped at 10 s. */
  backoffBaseMs?: number;
}

export class ScraperClient {
  readonly settings: ScrapingSettings;
  private readonly opts: ScraperClientOptions;
  private readonly dispatcher: Dispatcher;
  private readonly policy: OutboundPolicy;

  constructor(settings: ScrapingSettingsInput = {}, opts: ScraperClientOptions = {}) {
    this.settings = scrapingSettingsSchema.parse(settings);
    this.opts = opts;
    this.dispatcher = opts.dispatcher ?? new Agent({ keepAliveTimeout: 10_000, connections: 32 });
    const timeoutMs = this.settings.timeout * 1000;
    this.policy = new OutboundPolicy({
      target: "scraper",
      timeoutMs,
      maxAttempts: this.settings.max_retries + 1,
      baseDelayMs: opts.backoffBaseMs ?? 500,
      maxDelayMs: 10_000,
      classify,
      metrics: opts.metrics,
      timeoutError: () => new ScraperTimeoutError(`no answer from the scraper within ${timeoutMs} ms`, "TIMEOUT"),
    });
  }

  scrape(
    url: string,
    options: { pageOptions?: ScrapePageOptions; extractors?: Record<string, ExtractorSpec>; signal?: AbortSignal } = {},
  ): Promise<ScrapedPage> {
    const body: ScrapeBody = {
      url,
      pageOptions: options.pageOptions ?? {},
      ...(options.extractors ? { extractors: options.extractors } : {}),
    };
    return this.call("/scrape", scrapeResponseSchema, body, options.signal).then((r) => r.data);
  }

  scrapeBulk(
    urls: string[],
    options: { pageOptions?: ScrapePageOptions; extractors?: Record<string, ExtractorSpec>; signal?: AbortSignal } = {},
  ): Promise<BulkResult[]> {
    const body: BulkBody = {
      urls,
      pageOptions: options.pageOptions ?? {},
      ...(options.extractors ? { extractors: options.extractors } : {}),
    };
    return this.call("/scrape/bulk", bulkAnswerSchema, body, options.signal).then((r) => r.data);
  }

  /** Starts a crawl job (POST /crawl); its id is what crawlStatus and cancelCrawl take. */
  startCrawl(request: CrawlRequest, signal?: AbortSignal): Promise<{ id: string }> {
    return this.call("/crawl", jobStartedSchema, request, signal);
  }

  /** A crawl's progress and its results from `skip` on (GET /crawl/{id}?skip=). */
  crawlStatus(id: string, skip = 0, signal?: AbortSignal): Promise<CrawlStatus> {
    return this.call(`/crawl/${encodeURIComponent(id)}?skip=${skip}`, jobStatusSchema, undefined, signal);
  }

  /** Cancels a crawl (DELETE /crawl/{id}); its results so far stay readable. */
  async cancelCrawl(id: string, signal?: AbortSignal): Promise<void> {
    await this.call(`/crawl/${encodeURIComponent(id)}`, jobCancelledSchema, undefined, signal, "DELETE");
  }

  async health(signal?: AbortSignal): Promise<{ status: string } & Record<string, unknown>> {
    return this.call("/health", healthAnswerSchema, undefined, signal);
  }

  async close(): Promise<void> {
    if (!this.opts.dispatcher) await this.dispatcher.close();
  }

  /** One call through the policy; its answer is parsed with `answer` (the route's wire schema). */
  private async call<S extends z.ZodType>(
    path: string,
    answer: S,
    body: unknown,
    signal?: AbortSignal,
    method?: "DELETE",
  ): Promise<z.output<S>> {
    if (!this.settings.enabled) throw new ScraperDisabledError("the scraping component is disabled", "DISABLED");
    const target = new URL(path, this.settings.url).href;
    const verb = method ?? (body === undefined ? "GET" : "POST");
    const parsed = await this.policy.execute((ctx) => this.attempt(target, verb, body, ctx.signal, signal), {
      signal,
    });
    return this.read(answer, parsed, `${verb} ${new URL(target).pathname}`);
  }

  /** A 2xx answer checked against its route's schema: a malformed one is a MALFORMED_ANSWER naming its first bad field. */
  private read<S extends z.ZodType>(answer: S, parsed: unknown, route: string): z.output<S> {
    const checked = answer.safeParse(parsed);
    if (checked.success) return checked.data;
    throw new ScraperMalformedAnswerError(
      `the scraper's answer to ${route} is malformed: ${firstIssue(checked.error)}`,
      "MALFORMED_ANSWER",
    );
  }

  /** One exchange; `signal` ends it on the caller's abort or the policy's timeout. Its 2xx answer's JSON, unchecked. */
  private async attempt(
    target: string,
    method: string,
    body: unknown,
    signal: AbortSignal,
    caller?: AbortSignal,
  ): Promise<unknown> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.settings.api_key) headers.authorization = `Bearer ${this.settings.api_key}`;
    let res: Awaited<ReturnType<typeof fetch>>;
    let text: string;
    try {
      res = await fetch(target, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        dispatcher: this.dispatcher,
      });
      text = await res.text();
    } catch (err) {
      if (caller?.aborted || signal.aborted) throw err;
      const code = ((err as { cause?: { code?: string } }).cause?.code ?? "NETWORK") as string;
      // Which scraper: the platform default (scraping.url, or the Service of the Scraper the chart
      // creates) and a KnowledgeBase's scraperRef differ, and status shows this message. The origin
      // only: a URL's user-info is never shown.
      throw new ScraperClientError(`cannot reach the scraper at ${new URL(this.settings.url).origin}: ${code}`, code);
    }
    let parsed: Record<string, unknown> | undefined;
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      parsed = undefined;
    }
    if (res.ok && parsed) return parsed;
    const code = typeof parsed?.code === "string" ? parsed.code : `HTTP_${res.status}`;
    const message = typeof parsed?.error === "string" ? parsed.error : `scraper answered HTTP ${res.status}`;
    const err = errorFor(res.ok ? 502 : res.status, code, message);
    err.retryAfter = res.headers.get("retry-after") ?? undefined;
    throw err;
  }
}
