// The job routes: POST /crawl, GET and DELETE /crawl/{id}, GET /crawl/{id}/errors, the same four
// for /batch/scrape, and POST /map, in one of three dialects (firecrawl/dialects.ts): unprefixed
// (the scraper's own, Firecrawl v1's names), /v1 and /v2 (Firecrawl's SDKs). Registered inside the
// API plugin (routes/api.ts), so the key check covers them. The jobs themselves are in src/crawl/.
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { JobBackend, JobView } from "../../crawl/backend.ts";
import type { JobDeps } from "../../crawl/crawler.ts";
import type { JobKind } from "../../crawl/jobs.ts";
import { mapSite } from "../../crawl/map.ts";
import {
  jobCancelledSchema,
  jobErrorsSchema,
  jobIdParams,
  jobPageQuery,
  jobStartedSchema,
} from "../../crawl/schemas.ts";
import { CrawlScope } from "../../crawl/scope.ts";
import { isScraperError, ScraperError } from "../../errors.ts";
import type { JobDialect } from "../../firecrawl/dialects.ts";
import { bodyValidator } from "../../http-errors.ts";
import type { Limiter } from "../../limiter.ts";
import { errorResponses } from "../response-schemas.ts";
import { abortOnClose, type ZodApp } from "./scrape.ts";

export interface JobRoutesOptions {
  /** Paths, bodies and answers: the scraper's own, Firecrawl v1's or v2's (firecrawl/dialects.ts). */
  dialect: JobDialect;
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

function statusOf(job: JobView, req: FastifyRequest, skip: number, dialect: JobDialect) {
  const data = job.pages;
  const end = skip + data.length;
  const next = end < job.pageCount ? `${baseUrl(req)}${dialect.prefix}${PATHS[job.kind]}/${job.id}?skip=${end}` : null;
  return {
    success: true as const,
    status: job.status,
    total: job.total,
    completed: job.completed,
    failed: job.failed,
    creditsUsed: job.completed,
    expiresAt: new Date(job.expiresAt).toISOString(),
    ...(next === null && dialect.omitNullNext ? {} : { next }),
    ...(job.warning ? { warning: job.warning } : {}),
    data,
  };
}

/** What every job route needs: the Zod-typed app, the dialect, the jobs and their dependencies. */
interface Routes {
  app: ZodApp;
  options: JobRoutesOptions;
  /** An operationId, unique across the dialects: crawl, v1Crawl, v2Crawl. */
  opId: (name: string) => string;
}

/** GET status, DELETE and GET errors of one kind of job. */
function jobReadRoutes({ app, options, opId }: Routes, kind: JobKind, name: string, opName: string): void {
  const { jobs, dialect } = options;
  const { prefix, tag } = dialect;
  const config = options.jobDeps.config;
  const path = `${prefix}${PATHS[kind]}`;
  app.get(
    `${path}/:id`,
    {
      schema: {
        operationId: opId(`get${opName}Status`),
        summary: `Progress and results of a ${name}, one page at a time (follow next)`,
        description: `At most SCRAPER_JOB_PAGE_SIZE (${config.jobs.pageSize}) results and about 10 MB per answer.`,
        tags: [tag],
        security,
        params: jobIdParams,
        querystring: jobPageQuery,
        response: { 200: dialect.status, ...errorResponses(400, 401, 404, 503) },
      },
    },
    async (req) => {
      const slice = pageSlice(req.query.skip, req.query.limit, config.jobs.pageSize);
      return statusOf(await jobs.view(kind, req.params.id, slice), req, req.query.skip, dialect);
    },
  );
  app.delete(
    `${path}/:id`,
    {
      schema: {
        operationId: opId(`cancel${opName}`),
        summary: `Cancel a ${name}: pages in flight are aborted, none is fetched afterwards; results so far stay`,
        tags: [tag],
        security,
        params: jobIdParams,
        response: { 200: jobCancelledSchema, ...errorResponses(400, 401, 404, 409, 503) },
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
        operationId: opId(`get${opName}Errors`),
        summary: `Pages of a ${name} that failed, and URLs robots.txt disallowed`,
        tags: [tag],
        security,
        params: jobIdParams,
        response: { 200: jobErrorsSchema, ...errorResponses(400, 401, 404, 503) },
      },
    },
    async (req) => ({ success: true as const, ...(await jobs.errors(kind, req.params.id)) }),
  );
}

/** POST /crawl: a crawl job started, its id answered at once. */
function crawlStartRoute({ app, options, opId }: Routes): void {
  const { jobs, dialect, jobDeps } = options;
  const { prefix, tag } = dialect;
  app.post(
    `${prefix}/crawl`,
    {
      schema: {
        operationId: opId("crawl"),
        summary: "Start crawling a site from a URL (async): answers the job's id at once",
        description:
          "Same site and under the start path by default; robots.txt honoured (Disallow, and Crawl-delay up to " +
          "SCRAPER_CRAWL_DELAY_MAX between pages of a host); sitemaps read unless ignoreSitemap. " +
          "Each page is rendered like POST /scrape, with scrapeOptions.",
        tags: [tag],
        security,
        body: dialect.crawlBody,
        response: { 200: jobStartedSchema, ...errorResponses(400, 401, 403, 413, 415, 429, 500, 502, 503) },
      },
    },
    async (req) => {
      const body = dialect.toCrawl(req.body as never);
      // A bad pattern or a refused start URL is answered now, not found later in the job's errors.
      new CrawlScope(new URL((await jobDeps.service.precheck({ url: body.url })).href), body);
      const id = await jobs.startCrawl(body);
      return { success: true as const, id, url: `${baseUrl(req)}${prefix}/crawl/${id}` };
    },
  );
}

/** POST /batch/scrape: a batch job of the URLs that pass the prechecks. */
function batchStartRoute({ app, options, opId }: Routes): void {
  const { jobs, dialect, jobDeps } = options;
  const { prefix, tag } = dialect;
  const config = jobDeps.config;
  app.post(
    `${prefix}/batch/scrape`,
    {
      schema: {
        operationId: opId("batchScrape"),
        summary: "Start scraping a list of URLs (async): answers the job's id at once",
        description: `At most SCRAPER_CRAWL_MAX_PAGES (${config.jobs.maxPages}) URLs. Scrape options are top-level fields, as in Firecrawl v1.`,
        tags: [tag],
        security,
        body: dialect.batchBody,
        response: { 200: jobStartedSchema, ...errorResponses(400, 401, 403, 413, 415, 429, 500, 502, 503) },
      },
    },
    async (req) => {
      const body = dialect.toBatch(req.body as never);
      if (body.urls.length > config.jobs.maxPages) {
        throw new ScraperError("BAD_REQUEST", [`at most ${config.jobs.maxPages} URLs per batch`]);
      }
      const urls: string[] = [];
      const invalidURLs: string[] = [];
      for (const url of body.urls) {
        try {
          await jobDeps.service.precheck({ url });
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
        url: `${baseUrl(req)}${prefix}/batch/scrape/${id}`,
        ...(body.ignoreInvalidURLs ? { invalidURLs } : {}),
      };
    },
  );
}

/** POST /map: a site's URLs, answered when found (not a job). */
function mapRoute({ app, options, opId }: Routes): void {
  const { limiter, dialect, jobDeps } = options;
  const { prefix, tag } = dialect;
  app.post(
    `${prefix}/map`,
    {
      schema: {
        operationId: opId("map"),
        summary: "List a site's URLs from its sitemaps and the links of its start page",
        tags: [tag],
        security,
        body: dialect.mapBody,
        response: { 200: dialect.mapResponse, ...errorResponses(400, 401, 403, 408, 413, 415, 500, 502, 503) },
      },
    },
    async (req, reply) => {
      if (limiter.full) throw new ScraperError("QUEUE_FULL", [], { retryAfter: 1 });
      const body = dialect.toMap(req.body as never);
      await jobDeps.service.precheck({ url: body.url });
      return dialect.mapAnswer(await mapSite(body, jobDeps, abortOnClose(reply)));
    },
  );
}

export const jobRoutes: FastifyPluginAsync<JobRoutesOptions> = async (plain, options) => {
  const { op } = options.dialect;
  const opId = (name: string) => (op ? `${op}${name[0]?.toUpperCase()}${name.slice(1)}` : name);
  const app = plain.withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(bodyValidator);
  const routes: Routes = { app, options, opId };
  crawlStartRoute(routes);
  jobReadRoutes(routes, "crawl", "crawl", "Crawl");
  batchStartRoute(routes);
  jobReadRoutes(routes, "batch", "batch scrape", "BatchScrape");
  mapRoute(routes);
};
