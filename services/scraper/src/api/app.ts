// The scraper API: POST /scrape, POST /scrape/bulk, POST /search, and the Firecrawl v1 style
// crawl, batch and map routes (the key-checked plugin of routes/api.ts), GET /health (routes/health.ts), the published contract at /openapi.json (page:
// /docs), plus /healthz, /readyz and /metrics on the admin port only (a second Fastify instance,
// listenInternal in start.ts: the API's port has no such routes, the admin port no API route). buildApp() builds the parts and hands them to the route
// plugins as options; main.ts listens.
import {
  buildBaseApp,
  createLogger,
  createRegistry,
  internalApp,
  type Logger,
  openApi,
  type Registry,
} from "@capstan/shared";
import { redisTarget } from "@capstan/shared/redis";
import type { FastifyInstance } from "fastify";
import type { ScraperConfig } from "../config.ts";
import type { JobBackend } from "../crawl/backend.ts";
import type { JobDeps } from "../crawl/crawler.ts";
import { type JobKind, JobStore, type PageOutcome } from "../crawl/jobs.ts";
import { MemoryJobs } from "../crawl/memory-jobs.ts";
import { type JobsRedis, jobsRedis } from "../crawl/redis.ts";
import { SharedJobs } from "../crawl/shared-jobs.ts";
import { SiteFiles } from "../crawl/site-files.ts";
import { installErrorHandlers } from "../http-errors.ts";
import { Limiter } from "../limiter.ts";
import { type ApiMetrics, apiMetrics } from "../metrics.ts";
import { SsrfGuard } from "../ssrf/guard.ts";
import { type LlmClient, llmClient } from "./llm.ts";
import { httpRenderClient, type RenderClient } from "./render-client.ts";
import { scraperSchemas } from "./response-schemas.ts";
import { scraperApi } from "./routes/api.ts";
import { healthRoutes } from "./routes/health.ts";
import { ScrapeService } from "./scrape-service.ts";

export interface AppDeps {
  logger?: Logger;
  registry?: Registry;
  /** Default: HTTP to config.renderUrl. */
  renderClient?: RenderClient;
  guard?: SsrfGuard;
  llm?: LlmClient;
  /** The jobs' clock (tests move it to expire jobs); default Date.now. */
  now?: () => number;
  /**
   * Redis connections for shared jobs (config.redisUrl set): `state` for the jobs' state, `queue`
   * for BullMQ. Default: jobsRedis() of redis.ts with config.redisUrl.
   */
  redis?: JobsRedis;
}

export type { BulkEntry } from "./response-schemas.ts";

export function buildApp(config: ScraperConfig, deps: AppDeps = {}): FastifyInstance {
  const parts = scrapeParts(config, deps);
  const { logger, registry, renderClient } = parts;
  const { jobs, jobDeps, sweepTimer, stateRedis, siteDispatcher } = jobParts(parts, deps);
  const renderer = watchRenderer(renderClient);

  const app = buildBaseApp({
    service: "scraper",
    registry,
    logger,
    bodyLimit: 1024 * 1024,
    // Metrics and health on the admin port's own instance (listenInternal in start.ts), which has
    // no API route: the key-checked API is served on the API's port only.
    internal: true,
    notReady: () => (renderer.ready() ? undefined : `rendering service at ${config.renderUrl} is not ready`),
  });
  // Both listeners answer errors in the scraper's shape.
  for (const a of [app, internalApp(app)]) installErrorHandlers(a);
  app.addHook("onClose", async () => {
    renderer.stop();
    clearInterval(sweepTimer);
    await jobs.close();
    if (stateRedis && !deps.redis) stateRedis.disconnect();
    await siteDispatcher.close();
    if (!deps.renderClient) await renderClient.close();
  });

  registerOpenApi(app);
  app.register(healthRoutes, { limiter: parts.limiter, rendererReady: renderer.ready });
  const { service, limiter, llm, metrics } = parts;
  app.register(scraperApi, { config, service, limiter, llm, metrics, jobs, jobDeps });
  return app;
}

/** What /scrape is served with, each from `deps` when a test gives it, else built from `config`. */
interface ScrapeParts {
  config: ScraperConfig;
  logger: Logger;
  registry: Registry;
  metrics: ApiMetrics;
  renderClient: RenderClient;
  guard: SsrfGuard;
  llm: LlmClient;
  limiter: Limiter;
  service: ScrapeService;
}

function scrapeParts(config: ScraperConfig, deps: AppDeps): ScrapeParts {
  const logger = deps.logger ?? createLogger({ name: "scraper", level: config.logLevel });
  const registry = deps.registry ?? createRegistry();
  const metrics = apiMetrics(registry);
  const renderClient = deps.renderClient ?? httpRenderClient(config.renderUrl, metrics, config.apiKey);
  const guard =
    deps.guard ??
    new SsrfGuard({
      allowedHosts: config.allowedHosts,
      onBlocked: (stage, target, reason) => logger.warn({ stage, target, reason }, "SSRF guard refused a target"),
    });
  const llm = deps.llm ?? llmClient(config, metrics);
  const limiter = new Limiter(config.workerConcurrency, config.maxConcurrentRequests, (_running, queued) =>
    metrics.queueDepth.set(queued),
  );
  const service = new ScrapeService({ config, guard, limiter, renderClient, llm, metrics, logger });
  return { config, logger, registry, metrics, renderClient, guard, llm, limiter, service };
}

/**
 * Crawls and batches: their own limiter and site files (robots.txt, sitemaps), and where the jobs
 * live. With Redis, jobs are shared by every replica and kept across restarts; without, in memory.
 * The in-memory store is swept of expired jobs every minute.
 */
function jobParts(parts: ScrapeParts, deps: AppDeps) {
  const { config, guard, metrics, logger, service } = parts;
  // Crawls and batches take a background slot before a worker slot: by default one worker slot
  // is always left to /scrape (WORKER_CONCURRENCY - 1, at least 1).
  const jobLimiter = new Limiter(
    config.jobs.concurrency ?? Math.max(1, config.workerConcurrency - 1),
    Number.MAX_SAFE_INTEGER,
  );
  const siteDispatcher = guard.dispatcher(config.proxy);
  const siteFiles = new SiteFiles({ guard, dispatcher: siteDispatcher, metrics, maxBytes: config.maxResourceBytes });
  const jobDeps: JobDeps = { config, service, guard, jobLimiter, siteFiles, ...(deps.now ? { now: deps.now } : {}) };
  const onPage = (kind: JobKind, outcome: PageOutcome) => metrics.jobPages.inc({ kind, outcome });
  const store = memoryStore(parts, deps, onPage);
  // With Redis, jobs are shared by every replica and kept across restarts; without, in memory.
  const target = redisTarget(config.redisUrl, config.redis);
  const connections = deps.redis ?? (target ? jobsRedis(target, logger) : undefined);
  const stateRedis = connections?.state();
  const jobs: JobBackend =
    connections && stateRedis
      ? new SharedJobs({
          redis: stateRedis,
          queueRedis: connections.queue,
          jobDeps,
          logger,
          onPage,
          onStoreError: (operation) => metrics.jobStoreErrors.inc({ operation }),
          ...(deps.now ? { now: deps.now } : {}),
        })
      : new MemoryJobs(store, jobDeps);
  const sweepTimer = setInterval(() => store.sweep(), 60_000);
  sweepTimer.unref();
  return { jobs, jobDeps, sweepTimer, stateRedis, siteDispatcher };
}

/** The in-memory job store, its jobs' starts, pages and ends counted and logged. */
function memoryStore(
  { config, metrics, logger }: ScrapeParts,
  deps: AppDeps,
  onPage: (kind: JobKind, outcome: PageOutcome) => void,
): JobStore {
  return new JobStore({
    ...config.jobs,
    ...(deps.now ? { now: deps.now } : {}),
    onError: (job, err) => logger.error({ err, job: job.id, kind: job.kind }, "job failed unexpectedly"),
    onStart: (job) => metrics.jobsRunning.inc({ kind: job.kind }),
    onFinish: (job, ms) => {
      metrics.jobsRunning.dec({ kind: job.kind });
      const { id, kind, status, completed, failed } = job;
      logger.info({ job: id, kind, status, completed, failed, ms: Math.round(ms) }, "job finished");
    },
    onPage,
  });
}

/** Asks the rendering service whether it is ready, now and every 5 s; `ready()` is its last answer. */
function watchRenderer(renderClient: RenderClient): { ready: () => boolean; stop: () => void } {
  let ready = false;
  const probe = async () => {
    ready = await renderClient.probe();
  };
  void probe();
  const timer = setInterval(() => void probe(), 5_000);
  timer.unref();
  return { ready: () => ready, stop: () => clearInterval(timer) };
}

/** The published contract: /openapi.json and its /docs page. */
function registerOpenApi(app: FastifyInstance): void {
  app.register(openApi, {
    title: "Capstan scraper",
    description:
      "Renders web pages in Chromium and answers them as markdown, HTML, metadata and extracted values. " +
      "When the scraper runs with AUTH_ENABLED=true and API_KEY, every route but /health needs " +
      "Authorization: Bearer <API_KEY>. Every error is {success: false, error, code}.",
    version: "v1",
    schemas: scraperSchemas,
    securitySchemes: {
      scraperKey: { type: "http", scheme: "bearer", description: "The scraper's API_KEY (when AUTH_ENABLED=true)" },
    },
    tags: [
      { name: "scrape", description: "Scraping pages" },
      { name: "search", description: "Web search (needs SEARCH_ENDPOINT)" },
      { name: "jobs", description: "Crawls, async batch scrapes and site maps (Firecrawl v1 style)" },
      { name: "health", description: "Liveness" },
    ],
  });
}
