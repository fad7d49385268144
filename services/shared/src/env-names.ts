// Strict environment: a variable under one of a process's own prefixes (CAPSTAN_, QDRANT_, …) that
// no Capstan process or tool reads stops start-up, named with the nearest variable the process
// does read, so a typo (`CAPSTAN_LIMITR_WINDOW_MS`) is not ignored in silence.
//
// Variables of the platform's other processes and tools pass: the standalone launcher hands its
// whole environment to every service, and a developer's shell carries the setup's and the test
// ground's variables (`test/foundation/env-names.test.ts` checks every service's variables are
// listed here). Variables outside the prefixes are never checked: Node, the shell and Kubernetes
// set their own, and so does Kubernetes under a Service's name (service links, below).
import { nearest } from "./config-keys.ts";

/** Every variable under a Capstan prefix that some Capstan process, launcher or tool reads. */
export const PLATFORM_ENV: ReadonlySet<string> = new Set([
  // gateway
  "CAPSTAN_INTERNAL_PORT",
  "CAPSTAN_BODY_LIMIT_BYTES",
  "CAPSTAN_NAMESPACE",
  "CAPSTAN_RESOURCES_DIR",
  "CAPSTAN_LIMITER_WINDOW_MS",
  "CAPSTAN_LIMITER_REDIS_DOWN_POLICY",
  "CAPSTAN_LIMITER_REPLICAS",
  "CAPSTAN_LIMITER_REDIS_TIMEOUT_MS",
  "CAPSTAN_REDIS_BREAKER_FAILURES",
  "CAPSTAN_REDIS_BREAKER_PROBE_MS",
  "CAPSTAN_LIMITER_READY_WAIT_MS",
  "CAPSTAN_HISTORY_RETENTION_SECONDS",
  "CAPSTAN_HISTORY_MAX_ENTRIES",
  "CAPSTAN_HISTORY_BUFFER_ENTRIES",
  "CAPSTAN_USAGE_RETENTION_HOURS",
  "CAPSTAN_TERMINATION_GRACE_SECONDS",
  "CAPSTAN_SHUTDOWN_UNREADY_DELAY_MS",
  "CAPSTAN_SEARCH_URL",
  "CAPSTAN_INTERNAL_TOKEN",
  "CAPSTAN_KEY_VERIFIER",
  "CAPSTAN_SEARCH_TIMEOUT_MS",
  "CAPSTAN_SEARCH_MAX_RETRIES",
  "CAPSTAN_UPSTREAM_CONNECTIONS",
  "CAPSTAN_EGRESS_ALLOWED_HOSTS",
  "CAPSTAN_SECRETS_DIR",
  // search
  "CAPSTAN_SEARCH_CONFIG",
  "CAPSTAN_TRUSTED_PROXIES",
  "CAPSTAN_DATA_DIR",
  "CAPSTAN_QDRANT_COLLECTION_PREFIX",
  "CAPSTAN_QDRANT_SHARD_NUMBER",
  "CAPSTAN_QDRANT_STATUS_INTERVAL_MS",
  "CAPSTAN_QDRANT_REPLICATION_FACTOR",
  "CAPSTAN_QDRANT_WRITE_CONSISTENCY_FACTOR",
  "CAPSTAN_EMBEDDING_MODEL_DIR",
  "CAPSTAN_EMBEDDING_THREADS",
  "CAPSTAN_EMBEDDING_QUERY_THREADS",
  "CAPSTAN_EMBEDDING_DOCUMENTS_IDLE_S",
  "CAPSTAN_EMBEDDING_OPENAI_BASE_URL",
  "CAPSTAN_EMBEDDING_OPENAI_MODEL",
  "CAPSTAN_EMBEDDING_OPENAI_API_KEY",
  "CAPSTAN_EMBEDDING_OPENAI_DIMENSIONS",
  "CAPSTAN_RERANK_URL",
  "CAPSTAN_RERANK_STYLE",
  "CAPSTAN_RERANK_MODEL",
  "CAPSTAN_RERANK_API_KEY",
  "QDRANT_URL",
  "QDRANT_API_KEY",
  "QDRANT_API_KEY_FILE",
  "QDRANT_CA_FILE",
  "QDRANT_TIMEOUT_MS",
  // scraper
  "SCRAPER_ROLE",
  "SCRAPER_ALLOWED_HOSTS",
  "SCRAPER_BULK_MAX_URLS",
  "SCRAPER_JOB_CONCURRENCY",
  "SCRAPER_JOBS_MAX",
  "SCRAPER_JOBS_MAX_ACTIVE",
  "SCRAPER_JOB_TTL",
  "SCRAPER_CRAWL_MAX_PAGES",
  "SCRAPER_CRAWL_DELAY_MAX",
  "SCRAPER_JOB_MAX_BYTES",
  "SCRAPER_JOB_PAGE_SIZE",
  "SCRAPER_JOBS_REDIS_PREFIX",
  "SCRAPER_JOB_LOCK_MS",
  "SCRAPER_HOST_CONCURRENCY",
  "CHROMIUM_PATH",
  "CHROMIUM_SANDBOX",
  "RENDER_PORT",
  "RENDER_URL",
  // console
  "CAPSTAN_CONSOLE_DEFAULT_NAMESPACE",
  "CAPSTAN_CONSOLE_IDLE_TIMEOUT_SECONDS",
  "CAPSTAN_CONSOLE_MAX_SESSION_SECONDS",
  "CAPSTAN_CONSOLE_SECURE_COOKIES",
  "CAPSTAN_CONSOLE_ASSETS_DIR",
  "CAPSTAN_CONSOLE_KEY_WAIT_SECONDS",
  "CAPSTAN_CONSOLE_SIGN_IN_PER_MINUTE",
  "CAPSTAN_CONSOLE_STANDALONE_RESOURCES_DIR",
  "CAPSTAN_CONSOLE_STANDALONE_STATE_DIR",
  "CAPSTAN_CONSOLE_ADMIN_TOKEN_FILE",
  "CAPSTAN_SCRAPER_URL",
  "CAPSTAN_GATEWAY_URL",
  "CAPSTAN_GATEWAY_METRICS_URLS",
  "CAPSTAN_GATEWAY_METRICS_SERVICE",
  "CAPSTAN_CONSOLE_PROMETHEUS_URL",
  "CAPSTAN_CONSOLE_PROMETHEUS_SELECTOR",
  // operator
  "CAPSTAN_OPERATOR_CONFIG",
  "CAPSTAN_WATCH_NAMESPACE",
  "CAPSTAN_KUBE_CONTEXT",
  // the standalone launcher (scripts/standalone)
  "CAPSTAN_CONFIG",
  "CAPSTAN_STATE_DIR",
  "CAPSTAN_SCRAPER",
  "CAPSTAN_CONSOLE",
  "CONSOLE_PORT",
  "CAPSTAN_KEY_WARN_DAYS",
  "CAPSTAN_RESTART_BACKOFF_MS",
  "CAPSTAN_STANDALONE_ONCE",
  "SCRAPER_PORT",
  "SCRAPER_ADMIN_PORT",
  // setup, image builds and the test ground
  "CAPSTAN_CACHE",
  "CAPSTAN_SKIP_IMAGES",
  "CAPSTAN_IMAGES_KEEP",
  "CAPSTAN_BUILD_CA",
  "CAPSTAN_CONTAINERS",
  "CAPSTAN_GROUND_LOGS",
  "CAPSTAN_SKIP_KUBE",
  "CAPSTAN_E2E_IMAGES",
  "CAPSTAN_E2E_MARK",
  "CAPSTAN_TEST_QDRANT_PREFIX",
]);

/**
 * Families of variables whose names carry data: the gateway reads a provider key from
 * `CAPSTAN_SECRET_<SECRET>_<KEY>` (services/gateway/src/secrets.ts).
 */
export const PLATFORM_ENV_FAMILIES: readonly string[] = ["CAPSTAN_SECRET_"];

/**
 * Kubernetes' service links: for each Service `x-y` of the namespace a pod gets `X_Y_SERVICE_HOST`,
 * `X_Y_SERVICE_PORT[_NAME]`, `X_Y_PORT` and `X_Y_PORT_<n>_<PROTO>[_PROTO|_PORT|_ADDR]` (a Service
 * named `capstan-search` gives `CAPSTAN_SEARCH_PORT`). A name of that shape is one only when the
 * same Service's `_SERVICE_HOST` is set too.
 */
function isServiceLink(name: string, env: NodeJS.ProcessEnv): boolean {
  const m = /^(.+?)_(?:SERVICE_HOST|SERVICE_PORT(?:_.+)?|PORT(?:_\d+_(?:TCP|UDP|SCTP)(?:_PROTO|_PORT|_ADDR)?)?)$/.exec(
    name,
  );
  return m !== null && env[`${m[1]}_SERVICE_HOST`] !== undefined;
}

export interface StrictEnv {
  /** The process's own prefixes: every variable under them must be known. */
  prefixes: readonly string[];
  /** Variables the process reads outside its env map (e.g. the path of its config file). */
  also?: readonly string[];
}

/**
 * One line per unknown variable under the prefixes: `NAME: unknown variable (did you mean X?)`,
 * X the nearest variable this process reads (`own`: its env map and `also`).
 */
export function unknownEnv(env: NodeJS.ProcessEnv, own: readonly string[], strict: StrictEnv): string[] {
  const known = new Set(own);
  const lines: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!strict.prefixes.some((p) => name.startsWith(p))) continue;
    // Empty means unset, for every process (config.ts): nothing to read, nothing to refuse.
    if ((env[name] ?? "").trim() === "") continue;
    if (known.has(name) || PLATFORM_ENV.has(name) || isServiceLink(name, env)) continue;
    if (PLATFORM_ENV_FAMILIES.some((f) => name.startsWith(f))) continue;
    const hint = nearest(
      name,
      own.filter((n) => strict.prefixes.some((p) => n.startsWith(p))),
    );
    lines.push(`${name}: unknown variable${hint ? ` (did you mean ${hint}?)` : ""}`);
  }
  return lines;
}
