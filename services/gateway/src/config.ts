// Gateway configuration: code defaults here, then env (main.ts), then one zod parse that fails
// fast naming every bad field (loadConfig from @capstan/shared).
import { type EnvMap, envParsers, loadConfig } from "@capstan/shared";
import { egressAllowList } from "@capstan/shared/egress";
import { redisEnvMap, redisTopologySchema } from "@capstan/shared/redis";
import { z } from "zod";

export const gatewayConfigSchema = z.object({
  port: z.int().min(0).max(65535).default(8080),
  /** /metrics, /healthz, /readyz: kept inside the cluster by the chart's NetworkPolicy. */
  internalPort: z.int().min(0).max(65535).default(8090),
  host: z.string().min(1).default("0.0.0.0"),
  logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Largest accepted request body; larger → 413. */
  bodyLimitBytes: z
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(4 * 1024 * 1024),
  /** Standalone Redis; absent (and no Sentinel or Cluster in `redis`) → in-process limiter and in-memory history. */
  redisUrl: z
    .string()
    .regex(/^rediss?:\/\//)
    .optional(),
  /** The Redis topology: standalone (redisUrl), Sentinel or Cluster, and the password. */
  redis: redisTopologySchema,
  /** Namespace to watch (KubeSource); absent → all namespaces. */
  namespace: z.string().min(1).optional(),
  /** HMAC key under which status carries user-supplied keys (the operator's key-verifier Secret). */
  keyVerifier: z.string().min(16, "must be at least 16 characters").optional(),
  /** Comma-separated folders of resource YAML (FileSource); absent → KubeSource. */
  resourcesDirs: z.array(z.string().min(1)).default([]),
  limiter: z
    .object({
      /** Sliding-window length; QPM means "at most qpm requests in any window of this length". */
      windowMs: z.int().min(1000).max(3_600_000).default(60_000),
      /**
       * While Redis cannot answer: local = each replica admits floor(QPM / replicas); deny = 503;
       * fail-open = no limit (explicit opt-in only: the fleet's QPM is then not held).
       */
      redisDownPolicy: z.enum(["local", "deny", "fail-open"]).default("local"),
      /** Gateway replicas sharing each channel's QPM: the local policy's divisor (the operator passes it). */
      replicas: z.int().min(1).max(1000).default(1),
      /**
       * How long one call may wait for Redis before it counts as a failure. Generous on purpose: a
       * slow (overloaded) Redis still gives exact answers; a frozen one opens the breaker.
       */
      redisTimeoutMs: z.int().min(1).max(10_000).default(2_000),
      /** Consecutive failed Redis calls that open the breaker. */
      breakerFailures: z.int().min(1).max(1000).default(3),
      /** While the breaker is open: how often a probe asks Redis whether it answers again. */
      breakerProbeMs: z.int().min(10).max(60_000).default(1_000),
      /** At start-up, /readyz waits this long for the first Redis connection before serving degraded. */
      readyWaitMs: z.int().min(0).max(600_000).default(10_000),
      keyPrefix: z.string().default("capstan:rl:"),
    })
    .prefault({}),
  usage: z
    .object({
      /** Hours of hourly token usage kept in Redis per channel (default 90 days). */
      retentionHours: z
        .int()
        .min(1)
        .max(24 * 400)
        .default(24 * 90),
      /** Prefix of the TPM, budget and usage keys (each channel's under its own hash tag). */
      keyPrefix: z.string().default("capstan:tok:"),
    })
    .prefault({}),
  history: z
    .object({
      /** Exchanges older than this are trimmed. Default 30 days. */
      retentionSeconds: z
        .int()
        .min(60)
        .max(366 * 86400)
        .default(30 * 86400),
      /** At most this many exchanges per channel. */
      maxEntries: z.int().min(1).max(1_000_000).default(10_000),
      /** Exchanges kept in process while Redis is away, written when it returns (oldest dropped beyond). */
      bufferEntries: z.int().min(0).max(1_000_000).default(10_000),
      /** At most one "history buffer full" log line per this interval. */
      overflowLogIntervalMs: z.int().min(100).max(3_600_000).default(60_000),
      keyPrefix: z.string().default("capstan:history:"),
    })
    .prefault({}),
  shutdown: z
    .object({
      /**
       * The pod's terminationGracePeriodSeconds (the chart's <workload>.terminationGracePeriodSeconds,
       * passed by the operator): everything below fits inside it.
       */
      terminationGraceSeconds: z.int().min(5).max(3600).default(30),
      /** After SIGTERM, readiness fails and requests are still served this long (endpoints catch up). */
      unreadyDelayMs: z.int().min(0).max(60_000).default(5_000),
      /** Kept free at the end of the grace period to end cut streams, write history and exit. */
      reserveMs: z.int().min(1_000).max(60_000).default(4_000),
    })
    .prefault({})
    .refine((s) => s.unreadyDelayMs + s.reserveMs < s.terminationGraceSeconds * 1000, {
      message: "unreadyDelayMs + reserveMs must be shorter than terminationGraceSeconds",
    }),
  search: z
    .object({
      url: z
        .string()
        .regex(/^https?:\/\//)
        .default("http://127.0.0.1:8091"),
      /** Service-to-service bearer token sent to the search service. */
      internalToken: z.string().min(1).optional(),
      timeoutMs: z.int().min(100).max(120_000).default(10_000),
      maxRetries: z.int().min(0).max(5).default(2),
    })
    .default({ url: "http://127.0.0.1:8091", timeoutMs: 10_000, maxRetries: 2 }),
  upstream: z
    .object({
      /** Backoff before retry n is base * 2^n (with jitter), capped. */
      retryBaseMs: z.int().min(1).max(10_000).default(250),
      retryMaxMs: z.int().min(1).max(60_000).default(4_000),
      /** Connections per upstream origin. */
      connections: z.int().min(1).max(4096).default(256),
      /**
       * What an Agent's provider baseURL may reach although not a public address (hosts, IPs,
       * CIDRs, optionally :port; the scraper's syntax): everything else non-global is refused.
       */
      allowedHosts: egressAllowList,
    })
    .default({ retryBaseMs: 250, retryMaxMs: 4_000, connections: 256, allowedHosts: [] }),
  /** Folder of mounted Secrets: <dir>/<secret>/<key> (or <dir>/<namespace>/<secret>/<key>). */
  secretsDir: z.string().min(1).optional(),
});

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
export type GatewayConfigInput = z.input<typeof gatewayConfigSchema>;

export const gatewayEnvMap: EnvMap = {
  PORT: { path: "port", parse: envParsers.int },
  CAPSTAN_INTERNAL_PORT: { path: "internalPort", parse: envParsers.int },
  HOST: "host",
  LOG_LEVEL: "logLevel",
  CAPSTAN_BODY_LIMIT_BYTES: { path: "bodyLimitBytes", parse: envParsers.int },
  REDIS_URL: "redisUrl",
  ...redisEnvMap,
  CAPSTAN_NAMESPACE: "namespace",
  CAPSTAN_RESOURCES_DIR: { path: "resourcesDirs", parse: envParsers.list },
  CAPSTAN_LIMITER_WINDOW_MS: { path: "limiter.windowMs", parse: envParsers.int },
  CAPSTAN_USAGE_RETENTION_HOURS: { path: "usage.retentionHours", parse: envParsers.int },
  CAPSTAN_LIMITER_REDIS_DOWN_POLICY: "limiter.redisDownPolicy",
  CAPSTAN_LIMITER_REPLICAS: { path: "limiter.replicas", parse: envParsers.int },
  CAPSTAN_LIMITER_REDIS_TIMEOUT_MS: { path: "limiter.redisTimeoutMs", parse: envParsers.int },
  CAPSTAN_REDIS_BREAKER_FAILURES: { path: "limiter.breakerFailures", parse: envParsers.int },
  CAPSTAN_REDIS_BREAKER_PROBE_MS: { path: "limiter.breakerProbeMs", parse: envParsers.int },
  CAPSTAN_LIMITER_READY_WAIT_MS: { path: "limiter.readyWaitMs", parse: envParsers.int },
  CAPSTAN_HISTORY_RETENTION_SECONDS: { path: "history.retentionSeconds", parse: envParsers.int },
  CAPSTAN_HISTORY_MAX_ENTRIES: { path: "history.maxEntries", parse: envParsers.int },
  CAPSTAN_HISTORY_BUFFER_ENTRIES: { path: "history.bufferEntries", parse: envParsers.int },
  CAPSTAN_TERMINATION_GRACE_SECONDS: { path: "shutdown.terminationGraceSeconds", parse: envParsers.int },
  CAPSTAN_SHUTDOWN_UNREADY_DELAY_MS: { path: "shutdown.unreadyDelayMs", parse: envParsers.int },
  CAPSTAN_SEARCH_URL: "search.url",
  CAPSTAN_INTERNAL_TOKEN: "search.internalToken",
  CAPSTAN_KEY_VERIFIER: "keyVerifier",
  CAPSTAN_SEARCH_TIMEOUT_MS: { path: "search.timeoutMs", parse: envParsers.int },
  CAPSTAN_SEARCH_MAX_RETRIES: { path: "search.maxRetries", parse: envParsers.int },
  CAPSTAN_UPSTREAM_CONNECTIONS: { path: "upstream.connections", parse: envParsers.int },
  CAPSTAN_EGRESS_ALLOWED_HOSTS: { path: "upstream.allowedHosts", parse: envParsers.list },
  CAPSTAN_SECRETS_DIR: "secretsDir",
};

/** The gateway's own prefix: every variable under it must be one a Capstan process reads. */
export const GATEWAY_STRICT_ENV = { prefixes: ["CAPSTAN_"] };

/** Parses a config object (tests) or the environment (main.ts) into a full config. */
export function parseGatewayConfig(input: GatewayConfigInput = {}): GatewayConfig {
  return gatewayConfigSchema.parse(input);
}

export function loadGatewayConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  // An unknown CAPSTAN_ variable stops start-up, named with the nearest one the gateway reads.
  return loadConfig(gatewayConfigSchema, { env, envMap: gatewayEnvMap, strictEnv: GATEWAY_STRICT_ENV });
}
