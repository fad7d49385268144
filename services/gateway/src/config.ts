// Gateway configuration: code defaults here, then env (main.ts), then one zod parse that fails
// fast naming every bad field (loadConfig from @capstan/shared).
import { type EnvMap, envParsers, loadConfig } from "@capstan/shared";
import { z } from "zod";

export const gatewayConfigSchema = z.object({
  port: z.int().min(0).max(65535).default(8080),
  host: z.string().min(1).default("0.0.0.0"),
  logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Largest accepted request body; larger → 413. */
  bodyLimitBytes: z
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(4 * 1024 * 1024),
  /** Absent → in-process limiter and in-memory history (said at start-up). */
  redisUrl: z
    .string()
    .regex(/^rediss?:\/\//)
    .optional(),
  /** Namespace to watch (KubeSource); absent → all namespaces. */
  namespace: z.string().min(1).optional(),
  /** Comma-separated folders of resource YAML (FileSource); absent → KubeSource. */
  resourcesDirs: z.array(z.string().min(1)).default([]),
  limiter: z
    .object({
      /** Sliding-window length; QPM means "at most qpm requests in any window of this length". */
      windowMs: z.int().min(1000).max(3_600_000).default(60_000),
      /** What to do when Redis cannot answer: local = in-process limiter per replica. */
      redisDownPolicy: z.enum(["local", "allow", "deny"]).default("local"),
      /**
       * How long one limiter call may wait for Redis before the policy applies. Generous on
       * purpose: a slow (overloaded) Redis still gives exact answers, a fallback does not.
       */
      redisTimeoutMs: z.int().min(1).max(10_000).default(2_000),
      /** At start-up, /readyz waits this long for the first Redis connection before serving degraded. */
      readyWaitMs: z.int().min(0).max(600_000).default(10_000),
      keyPrefix: z.string().default("capstan:rl:"),
    })
    .default({
      windowMs: 60_000,
      redisDownPolicy: "local",
      redisTimeoutMs: 2_000,
      readyWaitMs: 10_000,
      keyPrefix: "capstan:rl:",
    }),
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
      keyPrefix: z.string().default("capstan:history:"),
    })
    .default({ retentionSeconds: 30 * 86400, maxEntries: 10_000, keyPrefix: "capstan:history:" }),
  search: z
    .object({
      url: z
        .string()
        .regex(/^https?:\/\//)
        .default("http://127.0.0.1:8081"),
      /** Service-to-service bearer token sent to the search service. */
      internalToken: z.string().min(1).optional(),
      timeoutMs: z.int().min(100).max(120_000).default(10_000),
      maxRetries: z.int().min(0).max(5).default(2),
    })
    .default({ url: "http://127.0.0.1:8081", timeoutMs: 10_000, maxRetries: 2 }),
  upstream: z
    .object({
      /** Backoff before retry n is base * 2^n (with jitter), capped. */
      retryBaseMs: z.int().min(1).max(10_000).default(250),
      retryMaxMs: z.int().min(1).max(60_000).default(4_000),
      /** Connections per upstream origin. */
      connections: z.int().min(1).max(4096).default(256),
    })
    .default({ retryBaseMs: 250, retryMaxMs: 4_000, connections: 256 }),
  /** Folder of mounted Secrets: <dir>/<secret>/<key> (or <dir>/<namespace>/<secret>/<key>). */
  secretsDir: z.string().min(1).optional(),
});

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
export type GatewayConfigInput = z.input<typeof gatewayConfigSchema>;

export const gatewayEnvMap: EnvMap = {
  PORT: { path: "port", parse: envParsers.int },
  HOST: "host",
  LOG_LEVEL: "logLevel",
  CAPSTAN_BODY_LIMIT_BYTES: { path: "bodyLimitBytes", parse: envParsers.int },
  REDIS_URL: "redisUrl",
  CAPSTAN_NAMESPACE: "namespace",
  CAPSTAN_RESOURCES_DIR: { path: "resourcesDirs", parse: envParsers.list },
  CAPSTAN_LIMITER_WINDOW_MS: { path: "limiter.windowMs", parse: envParsers.int },
  CAPSTAN_LIMITER_REDIS_DOWN_POLICY: "limiter.redisDownPolicy",
  CAPSTAN_LIMITER_REDIS_TIMEOUT_MS: { path: "limiter.redisTimeoutMs", parse: envParsers.int },
  CAPSTAN_LIMITER_READY_WAIT_MS: { path: "limiter.readyWaitMs", parse: envParsers.int },
  CAPSTAN_HISTORY_RETENTION_SECONDS: { path: "history.retentionSeconds", parse: envParsers.int },
  CAPSTAN_HISTORY_MAX_ENTRIES: { path: "history.maxEntries", parse: envParsers.int },
  CAPSTAN_SEARCH_URL: "search.url",
  CAPSTAN_INTERNAL_TOKEN: "search.internalToken",
  CAPSTAN_SEARCH_TIMEOUT_MS: { path: "search.timeoutMs", parse: envParsers.int },
  CAPSTAN_SEARCH_MAX_RETRIES: { path: "search.maxRetries", parse: envParsers.int },
  CAPSTAN_UPSTREAM_CONNECTIONS: { path: "upstream.connections", parse: envParsers.int },
  CAPSTAN_SECRETS_DIR: "secretsDir",
};

/** Parses a config object (tests) or the environment (main.ts) into a full config. */
export function parseGatewayConfig(input: GatewayConfigInput = {}): GatewayConfig {
  return gatewayConfigSchema.parse(input);
}

export function loadGatewayConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  return loadConfig(gatewayConfigSchema, { env, envMap: gatewayEnvMap });
}
