// POST /scrape, POST /scrape/bulk and POST /search as one plugin, one function a route. Its
// route schemas validate the bodies (a bad one is a 400 naming the field, in the scraper's error
// shape), serialise the answers, and are what /openapi.json publishes. The key check is not here:
// the API plugin (routes/api.ts) adds it to the context this plugin is registered in.
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyPluginAsync,
  FastifyReply,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { ScraperConfig } from "../../config.ts";
import { isScraperError, ScraperError } from "../../errors.ts";
import { bodyValidator } from "../../http-errors.ts";
import type { Limiter } from "../../limiter.ts";
import type { ApiMetrics } from "../../metrics.ts";
import type { LlmClient } from "../llm.ts";
import {
  type BulkEntry,
  bulkResponseSchema,
  errorResponses,
  scrapeResponseSchema,
  webSearchResponseSchema,
} from "../response-schemas.ts";
import { bulkBodySchema, scrapeBodySchema, searchBodySchema } from "../schemas.ts";
import type { ScrapeInput, ScrapeService } from "../scrape-service.ts";
import { webSearch } from "../search.ts";

export interface ScrapeRoutesOptions {
  config: ScraperConfig;
  service: ScrapeService;
  limiter: Limiter;
  llm: LlmClient;
  metrics: ApiMetrics;
}

/** Aborted when the client goes away before the answer is written (its scrape stops). */
export function abortOnClose(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.on("close", () => {
    if (!reply.raw.writableEnded) controller.abort(new ScraperError("TIMEOUT", [0, "client went away"]));
  });
  return controller.signal;
}

const security = [{ scraperKey: [] }];

/** The plugin's app with its route schemas typed by zod (jobs.ts registers on the same kind). */
export type ZodApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;

export const scrapeRoutes: FastifyPluginAsync<ScrapeRoutesOptions> = async (plain, options) => {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(bodyValidator);
  scrapeRoute(app, options);
  bulkRoute(app, options);
  searchRoute(app, options);
};

/** Scrapes each input with at most WORKER_CONCURRENCY at once; a failure is that entry's error. */
async function scrapeMany(
  { config, service }: ScrapeRoutesOptions,
  inputs: ScrapeInput[],
  signal: AbortSignal,
): Promise<BulkEntry[]> {
  const results: BulkEntry[] = new Array(inputs.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < inputs.length; i = next++) {
      const input = inputs[i] as ScrapeInput;
      try {
        results[i] = { url: input.url, success: true, data: await service.scrape(input, { signal, bulk: true }) };
      } catch (err) {
        const e = isScraperError(err) ? err : new ScraperError("INTERNAL");
        results[i] = { url: input.url, success: false, error: e.message, code: e.code, status: e.status };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(config.workerConcurrency, inputs.length) }, worker));
  return results;
}

/** POST /scrape: one page. */
function scrapeRoute(app: ZodApp, { service }: ScrapeRoutesOptions): void {
  app.post(
    "/scrape",
    {
      schema: {
        operationId: "scrape",
        summary: "Render one page and answer it as markdown, HTML, metadata and extracted values",
        tags: ["scrape"],
        security,
        body: scrapeBodySchema,
        response: {
          200: scrapeResponseSchema,
          ...errorResponses(400, 401, 403, 408, 413, 415, 500, 501, 502, 503),
        },
      },
    },
    async (req, reply) => {
      const data = await service.scrape(req.body as ScrapeInput, { signal: abortOnClose(reply) });
      return { success: true as const, data };
    },
  );
}

/** POST /scrape/bulk: several pages, each answered with its page or its own error, in order. */
function bulkRoute(app: ZodApp, options: ScrapeRoutesOptions): void {
  const { config, limiter } = options;
  app.post(
    "/scrape/bulk",
    {
      schema: {
        operationId: "scrapeBulk",
        summary: "Render several pages; each URL answers with its page or its own error, in order",
        description: `At most BULK_MAX_URLS URLs per request (${config.bulkMaxUrls} here).`,
        tags: ["scrape"],
        security,
        body: bulkBodySchema,
        response: { 200: bulkResponseSchema, ...errorResponses(400, 401, 413, 415, 500, 503) },
      },
    },
    async (req, reply) => {
      const { urls, pageOptions, extractors, formats } = req.body;
      if (urls.length > config.bulkMaxUrls) {
        throw new ScraperError("BAD_REQUEST", [`at most ${config.bulkMaxUrls} URLs per bulk request`]);
      }
      if (limiter.full) throw new ScraperError("QUEUE_FULL", [], { retryAfter: 1 });
      const data = await scrapeMany(
        options,
        urls.map((url) => ({ url, pageOptions, extractors, formats })),
        abortOnClose(reply),
      );
      const succeeded = data.filter((d) => d.success).length;
      return { success: true as const, total: data.length, succeeded, failed: data.length - succeeded, data };
    },
  );
}

/** POST /search: a web search, each result optionally scraped. */
function searchRoute(app: ZodApp, options: ScrapeRoutesOptions): void {
  const { config, limiter, llm, metrics } = options;
  app.post(
    "/search",
    {
      schema: {
        operationId: "webSearch",
        summary: "Web search through the metasearch service (SEARCH_ENDPOINT), optionally scraping each result",
        tags: ["search"],
        security,
        body: searchBodySchema,
        response: { 200: webSearchResponseSchema, ...errorResponses(400, 401, 408, 413, 415, 500, 501, 502, 503) },
      },
    },
    async (req, reply) => {
      const { query, limit, scrape, pageOptions } = req.body;
      const signal = abortOnClose(reply);
      const results = await webSearch(config, metrics, llm, query, limit, signal);
      if (!scrape) return { success: true as const, data: results };
      if (limiter.full) throw new ScraperError("QUEUE_FULL", [], { retryAfter: 1 });
      const pages = await scrapeMany(
        options,
        results.map((r) => ({ url: r.url, pageOptions })),
        signal,
      );
      return { success: true as const, data: results.map((r, i) => ({ ...r, page: pages[i] })) };
    },
  );
}
