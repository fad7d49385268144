// The Firecrawl v1 style job routes: POST /crawl, GET and DELETE /crawl/{id}, GET
// /crawl/{id}/errors, the same four for /batch/scrape, and POST /map. Registered inside the API
// plugin (routes/api.ts), so the key check covers them. The jobs themselves are in src/crawl/.
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { JobBackend, JobView } from "../../crawl/backend.ts";
import type { JobDeps } from "../../crawl/crawler.ts";
import type { JobKind } from "../../crawl/jobs.ts";
import { mapSite } from "../../crawl/map.ts";
import {
  batchBodySchema,
  crawlBodySchema,
  jobCancelledSchema,
  jobErrorsSchema,
  jobIdParams,
  jobPageQuery,
  jobStartedSchema,
  jobStatusSchema,
  mapBodySchema,
  mapResponseSchema,
} from "../../crawl/schemas.ts";
import { CrawlScope } from "../../crawl/scope.ts";
import { isScraperError, ScraperError } from "../../errors.ts";
import type { Limiter } from "../../limiter.ts";
import { errorResponses } from "../response-schemas.ts";
import { abortOnClose, bodyValidator } from "./scrape.ts";

export interface JobRoutesOptions {
  jobs: JobBackend;
  jobDeps: JobDeps;
  limiter: Limiter;
}

const security = [{ scraperKey: [] }];
/** A page of results stops growing past this many bytes (at least one result is always sent). */
const PAGE_MAX_BYTES = 10 * 1024 * 1024;

const PATHS: Record<JobKind, string> = { crawl: "/crawl", batch: "/batch/scrape" };

function baseUrl(req: FastifyRequest): string {
  return `${req.protocol}://${req.host}`;
}

/** A page of results' size: the `limit` asked, at most SCRAPER_JOB_PAGE_SIZE, about PAGE_MAX_BYTES. */
export function pageSlice(skip: number, asked: number | undefined, pageSize: number) {
  return { skip, size: Math.min(asked ?? pageSize, pageSize), maxBytes: PAGE_MAX_BYTES };
}

function statusOf(job: JobView, req: FastifyRequest, skip: number) {
  const data = job.pages;
  const end = skip + data.length;
  return {
    success: true as const,
    status: job.status,
    total: job.total,
    completed: job.completed,
    failed: job.failed,
    creditsUsed: job.completed,
    expiresAt: new Date(job.expiresAt).toISOString(),
    next: end < job.pageCount ? `${baseUrl(req)}${PATHS[job.kind]}/${job.id}?skip=${end}` : null,
    ...(job.warning ? { warning: job.warning } : {}),
    data,
  };
}

export const jobRoutes: FastifyPluginAsync<JobRoutesOptions> = async (plain, options) => {
  const { jobs, jobDeps, limiter } = options;
  const { config, service } = jobDeps;
  const app = plain.withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(bodyValidator);

  /** GET status, DELETE and GET errors of one kind of job. */
  function jobReadRoutes(kind: JobKind, name: string, opName: string) {
    const path = PATHS[kind];
    app.get(
      `${path}/:id`,
      {
        schema: {
          operationId: `get${opName}Status`,
          summary: `Progress and results of a ${name}, one page at a time (follow next)`,
          description: `At most SCRAPER_JOB_PAGE_SIZE (${config.jobs.pageSize}) results and about 10 MB per answer.`,
          tags: ["jobs"],
          security,
          params: jobIdParams,
          querystring: jobPageQuery,
          response: { 200: jobStatusSchema, ...errorResponses(400, 401, 404) },
        },
      },
      async (req) => {
        const slice = pageSlice(req.query.skip, req.query.limit, config.jobs.pageSize);
        return statusOf(await jobs.view(kind, req.params.id, slice), req, req.query.skip);
      },
    );
    app.delete(
      `${path}/:id`,
      {
        schema: {
          operationId: `cancel${opName}`,
          summary: `Cancel a ${name}: pages in flight are aborted, none is fetched afterwards; results so far stay`,
          tags: ["jobs"],
          security,
          params: jobIdParams,
          response: { 200: jobCancelledSchema, ...errorResponses(400, 401, 404, 409) },
        },
      },
      async (req) => {
        await jobs.cancel(kind, req.params.id);
        return { success: true as const, status: "cancelled" as const };
      },
    );
    app.get(
      `${path}/:id/errors`,
      {
        schema: {
          operationId: `get${opName}Errors`,
          summary: `Pages of a ${name} that failed, and URLs robots.txt disallowed`,
          tags: ["jobs"],
          security,
          params: jobIdParams,
          response: { 200: jobErrorsSchema, ...errorResponses(400, 401, 404) },
        },
      },
      async (req) => ({ success: true as const, ...(await jobs.errors(kind, req.params.id)) }),
    );
  }

  app.post(
    "/crawl",
    {
      schema: {
        operationId: "crawl",
        summary: "Start crawling a site from a URL (async): answers the job's id at once",
        description:
          "Same site and under the start path by default; robots.txt honoured (Disallow, and Crawl-delay up to " +
          "SCRAPER_CRAWL_DELAY_MAX between pages of a host); sitemaps read unless ignoreSitemap. " +
          "Each page is rendered like POST /scrape, with scrapeOptions.",
        tags: ["jobs"],
        security,
        body: crawlBodySchema,
        response: { 200: jobStartedSchema, ...errorResponses(400, 401, 403, 413, 415, 429, 500, 502, 503) },
      },
    },
    async (req) => {
      const body = req.body;
      // A bad pattern or a refused start URL is answered now, not found later in the job's errors.
      new CrawlScope(new URL((await service.precheck({ url: body.url })).href), body);
      const id = await jobs.startCrawl(body);
      return { success: true as const, id, url: `${baseUrl(req)}/crawl/${id}` };
    },
  );
  jobReadRoutes("crawl", "crawl", "Crawl");

  app.post(
    "/batch/scrape",
    {
      schema: {
        operationId: "batchScrape",
        summary: "Start scraping a list of URLs (async): answers the job's id at once",
        description: `At most SCRAPER_CRAWL_MAX_PAGES (${config.jobs.maxPages}) URLs. Scrape options are top-level fields, as in Firecrawl v1.`,
        tags: ["jobs"],
        security,
        body: batchBodySchema,
        response: { 200: jobStartedSchema, ...errorResponses(400, 401, 403, 413, 415, 429, 500, 502, 503) },
      },
    },
    async (req) => {
      const body = req.body;
      if (body.urls.length > config.jobs.maxPages) {
        throw new ScraperError("BAD_REQUEST", [`at most ${config.jobs.maxPages} URLs per batch`]);
      }
      const urls: string[] = [];
      const invalidURLs: string[] = [];
      for (const url of body.urls) {
        try {
          await service.precheck({ url });
          urls.push(url);
        } catch (err) {
          if (!body.ignoreInvalidURLs || !isScraperError(err)) throw err;
          invalidURLs.push(url);
        }
      }
      if (urls.length === 0) throw new ScraperError("BAD_REQUEST", ["no valid URL in urls"]);
      const id = await jobs.startBatch(body, urls);
      return {
        success: true as const,
        id,
        url: `${baseUrl(req)}/batch/scrape/${id}`,
        ...(body.ignoreInvalidURLs ? { invalidURLs } : {}),
      };
    },
  );
  jobReadRoutes("batch", "batch scrape", "BatchScrape");

  app.post(
    "/map",
    {
      schema: {
        operationId: "map",
        summary: "List a site's URLs from its sitemaps and the links of its start page",
        tags: ["jobs"],
        security,
        body: mapBodySchema,
        response: { 200: mapResponseSchema, ...errorResponses(400, 401, 403, 413, 415, 500, 502, 503, 504) },
      },
    },
    async (req, reply) => {
      if (limiter.full) throw new ScraperError("QUEUE_FULL", [], { retryAfter: 1 });
      await service.precheck({ url: req.body.url });
      const links = await mapSite(req.body, jobDeps, abortOnClose(reply));
      return { success: true as const, links };
    },
  );
};
