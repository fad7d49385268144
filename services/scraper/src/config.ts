// Scraper configuration: the environment of reference section 8 plus the rendering-service
// and SSRF settings, defaults in the schema, one parse at start that names every bad variable.
import { type EnvMap, envParsers, loadConfig } from "@capstan/shared";
import { redisEnvMap, redisTopologySchema } from "@capstan/shared/redis";
import { z } from "zod";

const httpUrl = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });
const port = z.int({ error: "must be an integer port" }).min(0).max(65535);

export const scraperConfigSchema = z
  .object({
    port: port.default(3002).describe("PORT: external port"),
    internalPort: port.optional().describe("INTERNAL_PORT: port the API binds inside the pod (default PORT)"),
    /**
     * /metrics, /healthz, /readyz: never on the API's port (a NetworkPolicy or the Service keeps
     * this one inside the cluster). Not the reference's INTERNAL_PORT, which is the API's own port.
     */
    adminPort: port.default(3003).describe("ADMIN_PORT: metrics and health"),
    host: z.string().min(1).default("0.0.0.0"),
    logLevel: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
    llm: z
      .object({
        apiKey: z.string().min(1).optional(),
        baseURL: httpUrl.default("https://api.openai.com/v1"),
        model: z.string().min(1).default("gpt-4o-mini"),
        embeddingModel: z.string().min(1).default("text-embedding-3-small"),
        localModelBaseURL: httpUrl.optional(),
      })
      .prefault({}),
    search: z
      .object({
        endpoint: httpUrl.optional(),
        engines: z.array(z.string().min(1)).default(["google", "bing", "duckduckgo"]),
        categories: z.array(z.string().min(1)).default(["general"]),
      })
      .prefault({}),
    proxy: z
      .object({
        server: z.url({ protocol: /^https?$/, error: "must be an http(s) proxy URL" }).optional(),
        username: z.string().optional(),
        password: z.string().optional(),
      })
      .prefault({}),
    blockMedia: z.boolean({ error: "must be true or false" }).default(false),
    maxConcurrentRequests: z.int().min(1).max(1000).default(10),
    requestTimeoutMs: z.int().min(100).max(600_000).default(30_000),
    workerConcurrency: z.int().min(1).max(256).default(5),
    taskTimeoutMs: z.int().min(100).max(3_600_000).default(60_000),
    /**
     * How long a rendered document may wait for its sub-resources (the load event) once it is
     * ready (DOMContentLoaded): one image that never answers cannot hold the scrape longer.
     */
    settleTimeoutMs: z.int().min(0).max(600_000).default(5_000),
    /** Any non-empty key works (the reference's own example is `secret`); a short one is a warning (configWarnings). */
    apiKey: z.string().min(1).optional(),
    authEnabled: z.boolean({ error: "must be true or false" }).default(false),
    /**
     * Debian's `chromium-headless-shell`: the old headless mode, built from the same sources as
     * `chromium` without the desktop browser layer. Playwright's own headless default is the same
     * build; it costs about half the CPU per navigation of `chromium --headless` (docs/benchmarks.md).
     * The binary itself, not /usr/bin's shell wrapper, which stays a parent process of every browser.
     */
    chromiumPath: z.string().min(1).default("/usr/lib/chromium/chromium-headless-shell"),
    /**
     * Chromium's own sandbox (user namespaces and chroot). Unset: on unless running as root. In a
     * pod the runtime's default seccomp profile refuses the namespaces it needs, so the operator
     * turns it off there and the container is the boundary (non-root, no capabilities, seccomp,
     * read-only root filesystem, the SSRF guard in front of every request).
     */
    chromiumSandbox: z.boolean({ error: "must be true or false" }).optional(),
    renderPort: port.default(3000),
    renderUrl: httpUrl.default("http://127.0.0.1:3000"),
    allowedHosts: z.array(z.string().min(1).max(260)).default([]),
    bulkMaxUrls: z.int().min(1).max(1000).default(100),
    /** Largest body a page or sub-resource may have; bigger ones fail the request. */
    maxResourceBytes: z
      .int()
      .min(1024)
      .default(20 * 1024 * 1024),
    /**
     * A page context is replaced after this many scrapes, bounding what one context (and its
     * renderer process) accumulates. 25 rather than 50 kept memory lower and flatter at no
     * measurable throughput cost (bench/scraper/RESULTS.md).
     */
    pageRecycleAfter: z.int().min(1).default(25),
    /**
     * Background jobs (crawls and async batches, src/crawl/): they live in this process's memory,
     * so their number, lifetime, pages and bytes are bounded (docs/scraper.md, "Jobs").
     */
    /**
     * Redis for crawl and batch jobs (src/crawl/shared-jobs.ts): with it, every replica serves every
     * job and jobs survive a restart; without it, jobs live in this process's memory.
     */
    redisUrl: z
      .string()
      .regex(/^rediss?:\/\//, "must be a redis:// or rediss:// URL")
      .optional()
      .describe("REDIS_URL"),
    /**
     * Sentinel or Cluster instead (REDIS_MODE with its addresses and REDIS_PASSWORD), as the
     * gateway and search read them; standalone uses redisUrl.
     */
    redis: redisTopologySchema,
    jobs: z
      .object({
        /**
         * Prefix of every Redis key of the jobs (BullMQ's and the scraper's own). In braces, a Redis
         * Cluster hash tag: all keys of one scraper land in one slot, as BullMQ and the Lua scripts
         * need. Each Scraper needs its own (the operator sets {capstan-scraper:<namespace>/<name>}):
         * scrapers differ in allowed hosts and proxy, so one must never run another's pages.
         */
        redisPrefix: z
          .string()
          .regex(/^\{[^{}]+\}$/, "must be a hash tag in braces, e.g. {capstan-scraper}")
          .default("{capstan-scraper}"),
        /**
         * How long a replica holds a page of a shared job without renewing its lock before another
         * replica takes the page over (a replica that died mid-page); BullMQ's lockDuration (ms).
         */
        lockMs: z.int().min(1_000).max(600_000).default(30_000),
        /** Pages of one host fetched at once, by all jobs and replicas together (hosts without Crawl-delay). */
        hostConcurrency: z.int().min(1).max(256).default(4),
        /** Pages all jobs together render at once; default WORKER_CONCURRENCY - 1 (at least 1), so /scrape always has a slot. */
        concurrency: z.int().min(1).max(256).optional(),
        /** Jobs kept (running or finished, until they expire); a new one past this evicts the oldest finished one. */
        maxJobs: z.int().min(1).max(10_000).default(20),
        /** Jobs running at once; more are refused with 429 JOBS_FULL. */
        maxActive: z.int().min(1).max(1000).default(4),
        /** How long a job and its results are kept after it was created (ms). */
        ttlMs: z
          .int()
          .min(1_000)
          .max(7 * 24 * 3_600_000)
          .default(3_600_000),
        /**
         * Most robots.txt's Crawl-delay makes a crawl wait between two pages of a host (ms); a longer
         * delay is lowered to it, so a hostile robots.txt cannot stall a job. 0: Crawl-delay is ignored.
         */
        maxCrawlDelayMs: z.int().min(0).max(300_000).default(30_000),
        /** Most pages one crawl fetches (a larger `limit` is lowered to it). */
        maxPages: z.int().min(1).max(100_000).default(50_000),
        /** Most bytes of results one job keeps; the job stops (completed, with a warning) when it is reached. */
        maxBytes: z
          .int()
          .min(1024)
          .default(32 * 1024 * 1024),
        /** Results per GET page of a job (the `limit` query parameter may ask for fewer). */
        pageSize: z.int().min(1).max(1000).default(100),
      })
      .prefault({}),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.authEnabled && !cfg.apiKey) {
      ctx.addIssue({ code: "custom", path: ["apiKey"], message: "API_KEY is required when AUTH_ENABLED=true" });
    }
  });

export type ScraperConfig = z.infer<typeof scraperConfigSchema>;

/** Keys shorter than this are accepted with a warning at start-up. */
export const RECOMMENDED_KEY_LENGTH = 16;

/** What is allowed but unwise in a loaded configuration, for the process to log at start-up. */
export function configWarnings(config: ScraperConfig): string[] {
  const out: string[] = [];
  if (config.apiKey !== undefined && config.apiKey.length < RECOMMENDED_KEY_LENGTH) {
    out.push(
      `API_KEY is shorter than ${RECOMMENDED_KEY_LENGTH} characters: anyone who can guess it can scrape through this service; use a long random key`,
    );
  }
  return out;
}

const int = (path: string) => ({ path, parse: envParsers.int });
const bool = (path: string) => ({ path, parse: envParsers.bool });
const list = (path: string) => ({ path, parse: envParsers.list });

export const SCRAPER_ENV: EnvMap = {
  PORT: int("port"),
  INTERNAL_PORT: int("internalPort"),
  ADMIN_PORT: int("adminPort"),
  HOST: "host",
  LOGGING_LEVEL: { path: "logLevel", parse: (raw) => raw.trim().toLowerCase() },
  LLM_API_KEY: "llm.apiKey",
  LLM_BASE_URL: "llm.baseURL",
  MODEL_NAME: "llm.model",
  MODEL_EMBEDDING_NAME: "llm.embeddingModel",
  LOCAL_MODEL_BASE_URL: "llm.localModelBaseURL",
  SEARCH_ENDPOINT: "search.endpoint",
  SEARCH_ENGINES: list("search.engines"),
  SEARCH_CATEGORIES: list("search.categories"),
  PROXY_SERVER: "proxy.server",
  PROXY_USERNAME: "proxy.username",
  PROXY_PASSWORD: "proxy.password",
  BLOCK_MEDIA: bool("blockMedia"),
  MAX_CONCURRENT_REQUESTS: int("maxConcurrentRequests"),
  REQUEST_TIMEOUT: int("requestTimeoutMs"),
  WORKER_CONCURRENCY: int("workerConcurrency"),
  TASK_TIMEOUT: int("taskTimeoutMs"),
  SETTLE_TIMEOUT: int("settleTimeoutMs"),
  API_KEY: "apiKey",
  AUTH_ENABLED: bool("authEnabled"),
  CHROMIUM_PATH: "chromiumPath",
  CHROMIUM_SANDBOX: bool("chromiumSandbox"),
  RENDER_PORT: int("renderPort"),
  RENDER_URL: "renderUrl",
  SCRAPER_ALLOWED_HOSTS: list("allowedHosts"),
  SCRAPER_BULK_MAX_URLS: int("bulkMaxUrls"),
  SCRAPER_JOB_CONCURRENCY: int("jobs.concurrency"),
  SCRAPER_JOBS_MAX: int("jobs.maxJobs"),
  SCRAPER_JOBS_MAX_ACTIVE: int("jobs.maxActive"),
  SCRAPER_JOB_TTL: int("jobs.ttlMs"),
  SCRAPER_CRAWL_MAX_PAGES: int("jobs.maxPages"),
  SCRAPER_CRAWL_DELAY_MAX: int("jobs.maxCrawlDelayMs"),
  SCRAPER_JOB_MAX_BYTES: int("jobs.maxBytes"),
  SCRAPER_JOB_PAGE_SIZE: int("jobs.pageSize"),
  REDIS_URL: "redisUrl",
  ...redisEnvMap,
  SCRAPER_JOBS_REDIS_PREFIX: "jobs.redisPrefix",
  SCRAPER_JOB_LOCK_MS: int("jobs.lockMs"),
  SCRAPER_HOST_CONCURRENCY: int("jobs.hostConcurrency"),
};

/** The scraper's own prefixes: every variable under them must be one a Capstan process reads. */
export const SCRAPER_STRICT_ENV = { prefixes: ["SCRAPER_", "CHROMIUM_", "RENDER_"], also: ["SCRAPER_ROLE"] };

/** Empty variables count as unset (the operator renders optional fields as ""). */
function withoutEmpty(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== ""));
}

export function loadScraperConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides?: Record<string, unknown>,
): ScraperConfig {
  return loadConfig(scraperConfigSchema, {
    env: withoutEmpty(env),
    envMap: SCRAPER_ENV,
    // An unknown SCRAPER_, CHROMIUM_ or RENDER_ variable stops start-up, named with the nearest one
    // the scraper reads. The reference's own names (PORT, API_KEY, …) have no common prefix.
    strictEnv: SCRAPER_STRICT_ENV,
    ...(overrides ? { overrides } : {}),
  });
}

/** A config from code defaults plus overrides (tests, embedding callers). */
export function scraperConfig(overrides: Record<string, unknown> = {}): ScraperConfig {
  return loadScraperConfig({}, overrides);
}
