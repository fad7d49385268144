// Console configuration: code defaults here, then env (main.ts), then one zod parse that fails fast
// naming every bad field (loadConfig from @capstan/shared).
import { type EnvMap, envParsers, loadConfig } from "@capstan/shared";
import { redisEnvMap, redisTopologySchema } from "@capstan/shared/redis";
import { z } from "zod";

export const consoleConfigSchema = z.object({
  port: z.int().min(0).max(65535).default(8097),
  /** The internal port: /metrics, /healthz, /readyz (never on `port`, which faces users). */
  internalPort: z.int().min(0).max(65535).default(8098),
  host: z.string().min(1).default("0.0.0.0"),
  logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** The namespace a user lands in after signing in (they may switch to any other). */
  defaultNamespace: z.string().min(1).default("default"),
  /** A session ends this long after its last request (sliding), and at the latest after maxSessionSeconds. */
  idleTimeoutSeconds: z.int().min(60).max(86_400).default(1800),
  maxSessionSeconds: z
    .int()
    .min(60)
    .max(7 * 86_400)
    .default(8 * 3600),
  /** Mark the session cookie Secure (set it when the console is served over HTTPS, as in a cluster). */
  secureCookies: z.boolean().default(false),
  /** Folder of the built frontend (console/dist, made by `npm run build -w @capstan/console`). */
  assetsDir: z.string().min(1).optional(),
  /** The gateway's public URL, shown in the ready-to-paste snippets (the channel's status.endpoint wins). */
  gatewayUrl: z.string().min(1).optional(),
  /** The search service the "try a search" box calls, and its public URL for snippets. */
  searchUrl: z.string().min(1).optional(),
  /**
   * The scraper "try a scrape" calls for every Scraper (standalone: the launcher's one scraper);
   * unset, each Scraper's spec.client.url or status.endpoint (its Service).
   */
  scraperUrl: z.string().min(1).optional(),
  /**
   * The usage page's source, the first set of: a Prometheus that scrapes the gateways (its
   * series picked out by prometheusSelector, label matchers); the gateway Service whose
   * EndpointSlices list every replica (`<namespace>/<service>`, read on its "internal" port with
   * the console's own ServiceAccount); or fixed metrics URLs (standalone mode's one gateway).
   */
  prometheusUrl: z.url().optional(),
  prometheusSelector: z.string().min(1).default('job="capstan-gateway"'),
  gatewayMetricsService: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "expected <namespace>/<service>")
    .optional(),
  /** Prometheus-text metrics endpoints of the gateway replicas, read for the usage page. */
  gatewayMetricsUrls: z.array(z.string().min(1)).default([]),
  /** Sign-in attempts (right or wrong) per client address per minute; more are answered 429. */
  signInPerMinute: z.int().min(1).max(10_000).default(10),
  /**
   * Proxies whose X-Forwarded-For names the client (CIDRs or addresses, e.g. the ingress
   * controller's): the sign-in limit then counts per forwarded client rather than per proxy.
   */
  trustedProxies: z.array(z.string().min(1)).default([]),
  /**
   * Where sessions live when the console runs as several replicas (redis-sessions.ts): the same
   * Redis as the data plane's (REDIS_URL, or REDIS_MODE with its addresses). Unset: in this
   * process's memory, one replica.
   */
  redisUrl: z
    .string()
    .regex(/^rediss?:\/\//)
    .optional(),
  redis: redisTopologySchema,
  /** How long the console waits for the operator to issue a key before telling the user so. */
  keyWaitSeconds: z.int().min(1).max(300).default(30),
  /**
   * Standalone mode (`npm start`, no cluster): the YAML folder and state folder of the launcher,
   * and the file holding the local admin token. All three set, or none.
   */
  standaloneResourcesDir: z.string().min(1).optional(),
  standaloneStateDir: z.string().min(1).optional(),
  adminTokenFile: z.string().min(1).optional(),
});

export type ConsoleConfig = z.infer<typeof consoleConfigSchema>;
export type ConsoleConfigInput = z.input<typeof consoleConfigSchema>;

const ENV: EnvMap = {
  PORT: { path: "port", parse: envParsers.int },
  CAPSTAN_INTERNAL_PORT: { path: "internalPort", parse: envParsers.int },
  CAPSTAN_CONSOLE_SIGN_IN_PER_MINUTE: { path: "signInPerMinute", parse: envParsers.int },
  CAPSTAN_TRUSTED_PROXIES: { path: "trustedProxies", parse: envParsers.list },
  HOST: "host",
  LOG_LEVEL: "logLevel",
  CAPSTAN_CONSOLE_DEFAULT_NAMESPACE: "defaultNamespace",
  CAPSTAN_CONSOLE_IDLE_TIMEOUT_SECONDS: { path: "idleTimeoutSeconds", parse: envParsers.int },
  CAPSTAN_CONSOLE_MAX_SESSION_SECONDS: { path: "maxSessionSeconds", parse: envParsers.int },
  CAPSTAN_CONSOLE_SECURE_COOKIES: { path: "secureCookies", parse: envParsers.bool },
  CAPSTAN_CONSOLE_ASSETS_DIR: "assetsDir",
  CAPSTAN_GATEWAY_URL: "gatewayUrl",
  CAPSTAN_SEARCH_URL: "searchUrl",
  CAPSTAN_SCRAPER_URL: "scraperUrl",
  CAPSTAN_GATEWAY_METRICS_URLS: { path: "gatewayMetricsUrls", parse: envParsers.list },
  CAPSTAN_GATEWAY_METRICS_SERVICE: "gatewayMetricsService",
  CAPSTAN_CONSOLE_PROMETHEUS_URL: "prometheusUrl",
  CAPSTAN_CONSOLE_PROMETHEUS_SELECTOR: "prometheusSelector",
  CAPSTAN_CONSOLE_KEY_WAIT_SECONDS: { path: "keyWaitSeconds", parse: envParsers.int },
  CAPSTAN_CONSOLE_STANDALONE_RESOURCES_DIR: "standaloneResourcesDir",
  CAPSTAN_CONSOLE_STANDALONE_STATE_DIR: "standaloneStateDir",
  CAPSTAN_CONSOLE_ADMIN_TOKEN_FILE: "adminTokenFile",
  REDIS_URL: "redisUrl",
  ...redisEnvMap,
};

/** Standalone mode's folders and admin token file, or undefined when the console serves a cluster. */
export function standaloneOf(c: ConsoleConfig) {
  const { standaloneResourcesDir: resourcesDir, standaloneStateDir: stateDir, adminTokenFile } = c;
  if (!resourcesDir && !stateDir && !adminTokenFile) return undefined;
  if (!resourcesDir || !stateDir || !adminTokenFile) {
    throw new Error(
      "standalone mode needs CAPSTAN_CONSOLE_STANDALONE_RESOURCES_DIR, CAPSTAN_CONSOLE_STANDALONE_STATE_DIR and CAPSTAN_CONSOLE_ADMIN_TOKEN_FILE together",
    );
  }
  return { resourcesDir, stateDir, adminTokenFile };
}

export function loadConsoleConfig(
  overrides: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = process.env,
): ConsoleConfig {
  return loadConfig(consoleConfigSchema, { env, envMap: ENV, overrides });
}
