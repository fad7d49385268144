// Search service configuration: code defaults here, then an optional file, then env, then one
// parse (loadConfig from @capstan/shared) that names every bad field.
import { type EnvMap, envParsers, loadConfig } from "@capstan/shared";
import { egressAllowList } from "@capstan/shared/egress";
import { REDIS_DOWN_POLICIES } from "@capstan/shared/limiter";
import { redisEnvMap, redisTopologySchema } from "@capstan/shared/redis";
import { z } from "zod";
import { isValidCidr } from "./auth/client-ip.ts";

const cidr = z.string().refine(isValidCidr, { message: "not an IP address or CIDR" });

export const searchConfigSchema = z.object({
  port: z.int().min(0).max(65_535).default(8081),
  /** The documents API, /metrics and health: kept inside the cluster by the chart's NetworkPolicy. */
  internalPort: z.int().min(0).max(65_535).default(8091),
  host: z.string().min(1).default("0.0.0.0"),
  logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Folders of YAML resources (standalone); else the Kubernetes API (kubeconfig or in-cluster). */
  resourcesDirs: z.array(z.string().min(1)).default([]),
  kubeconfig: z.string().optional(),
  namespace: z.string().optional(),
  /** Bearer token of service-to-service calls (documents API, gateway RAG). Absent: internal API off. */
  internalToken: z.string().min(16, "must be at least 16 characters").optional(),
  /** HMAC key under which status carries user-supplied keys (the operator's key-verifier Secret). */
  keyVerifier: z.string().min(16, "must be at least 16 characters").optional(),
  trustedProxies: z.array(cidr).default([]),
  /** Redis of the per-key limiter (shared by every replica); absent: an in-process limiter per replica. */
  redisUrl: z
    .string()
    .regex(/^rediss?:\/\//)
    .optional(),
  /** The Redis topology: standalone (redisUrl), Sentinel or Cluster, and the password. */
  redis: redisTopologySchema,
  limiter: z
    .object({
      windowMs: z.int().min(1000).max(3_600_000).default(60_000),
      redisDownPolicy: z.enum(REDIS_DOWN_POLICIES).default("local"),
      redisTimeoutMs: z.int().min(1).max(10_000).default(2_000),
      keyPrefix: z.string().default("capstan:search-rl:"),
    })
    .prefault({}),
  /** Embedded vector store folder; absent: in memory only. */
  dataDir: z.string().optional(),
  qdrant: z
    .object({
      /**
       * The Qdrant to use; a comma-separated list of the peers of a Qdrant cluster lets search go
       * on to the next peer when one does not answer (behind one Service, one URL is enough).
       */
      url: z
        .string()
        .refine((v) => v.split(",").every((u) => URL.canParse(u.trim())), {
          message: "must be a URL (or a comma-separated list of URLs)",
        })
        .optional(),
      /** Sent as header api-key; never logged. apiKeyFile (a mounted Secret) is read at start. */
      apiKey: z.string().optional(),
      apiKeyFile: z.string().min(1).optional(),
      /** PEM CA bundle trusted for an https url (a Qdrant behind a private CA). */
      caFile: z.string().min(1).optional(),
      collectionPrefix: z
        .string()
        .regex(/^[a-z0-9_]+$/)
        .default("capstan_chunks"),
      timeoutMs: z.int().min(100).default(10_000),
      hnsw: z
        .object({ m: z.int().min(4).default(16), efConstruct: z.int().min(8).default(128) })
        .default({ m: 16, efConstruct: 128 }),
      searchEf: z.int().min(8).default(128),
      /**
       * How new collections are laid out on a Qdrant cluster (store/qdrant-cluster.ts). Absent:
       * from the peers the server reports (one: Qdrant's defaults; n: n shards up to 12,
       * replication 2, write consistency 1, so one lost peer loses neither reads nor writes).
       */
      collection: z
        .object({
          shardNumber: z.int().min(1).max(1024).optional(),
          replicationFactor: z.int().min(1).max(16).optional(),
          writeConsistencyFactor: z.int().min(1).max(16).optional(),
        })
        .default({}),
      /** How often the shards' state on a Qdrant cluster is read for /readyz and the gauges. */
      statusIntervalMs: z.int().min(1000).max(3_600_000).default(15_000),
    })
    .default({
      collectionPrefix: "capstan_chunks",
      timeoutMs: 10_000,
      hnsw: { m: 16, efConstruct: 128 },
      searchEf: 128,
      collection: {},
      statusIntervalMs: 15_000,
    }),
  embedding: z
    .object({
      /** A sentence-transformers folder exported to ONNX (embedding/model-files.ts); absent: the pip packages of scripts/setup.d/40-search.sh. */
      modelDir: z.string().optional(),
      modelName: z.string().default("all-MiniLM-L6-v2"),
      /** Intra-op threads of the documents (ingestion) worker; absent: every core. */
      threads: z.int().min(1).max(64).optional(),
      /** Intra-op threads of the search-query worker. */
      queryThreads: z.int().min(1).max(64).default(1),
      /** The documents (ingestion) worker closes after this many seconds without documents, giving its model's memory back. */
      documentsIdleSeconds: z.int().min(1).max(86_400).default(10),
      batchSize: z.int().min(1).max(256).default(32),
      /** Longest input in tokens; absent: the model folder's max_seq_length (256 for the default model). */
      maxTokens: z.int().min(8).max(8192).optional(),
      cacheSize: z.int().min(0).default(2048),
      openai: z
        .object({
          baseURL: z.string().url(),
          model: z.string().min(1),
          apiKey: z.string().optional(),
          dimensions: z.int().min(1).max(8192),
          timeoutMs: z.int().min(100).default(10_000),
        })
        .optional(),
    })
    .default({
      modelName: "all-MiniLM-L6-v2",
      queryThreads: 1,
      documentsIdleSeconds: 10,
      batchSize: 32,
      cacheSize: 2048,
    }),
  search: z
    .object({
      maxResultsLimit: z.int().min(1).max(1000).default(100),
      maxTextLength: z.int().min(1).default(8192),
      maxKnowledgeIds: z.int().min(1).max(256).default(64),
      batchMaxQueries: z.int().min(1).max(256).default(32),
      /** Vector candidates fetched for reranking: max(maxResults * factor, minCandidates). */
      candidateFactor: z.int().min(1).default(3),
      minCandidates: z.int().min(1).default(30),
    })
    .default({
      maxResultsLimit: 100,
      maxTextLength: 8192,
      maxKnowledgeIds: 64,
      batchMaxQueries: 32,
      candidateFactor: 3,
      minCandidates: 30,
    }),
  /**
   * What the remote embedding and rerank endpoints may reach although not public addresses
   * (hosts, IPs, CIDRs, optionally :port): everything else non-global is refused (egress guard).
   */
  egressAllowedHosts: egressAllowList,
  rerank: z
    .object({
      // 0.9: measured on the evaluation set (docs/search.md, "Scores calibrated for the model").
      vectorWeight: z.number().min(0).max(1).default(0.9),
      external: z
        .object({
          url: z.string().url(),
          style: z.enum(["tei", "cohere"]).default("tei"),
          model: z.string().optional(),
          apiKey: z.string().optional(),
          timeoutMs: z.int().min(100).default(5000),
        })
        .optional(),
    })
    .default({ vectorWeight: 0.9 }),
  documents: z
    .object({
      /** Largest document accepted by the documents API, in bytes of JSON body. */
      maxBodyBytes: z
        .int()
        .min(1024)
        .default(16 * 1024 * 1024),
    })
    .default({ maxBodyBytes: 16 * 1024 * 1024 }),
});

export type SearchConfig = z.infer<typeof searchConfigSchema>;
export type SearchConfigInput = z.input<typeof searchConfigSchema>;

export const searchEnvMap: EnvMap = {
  PORT: { path: "port", parse: envParsers.int },
  CAPSTAN_INTERNAL_PORT: { path: "internalPort", parse: envParsers.int },
  HOST: "host",
  LOG_LEVEL: "logLevel",
  CAPSTAN_RESOURCES_DIR: { path: "resourcesDirs", parse: envParsers.list },
  KUBECONFIG: "kubeconfig",
  CAPSTAN_NAMESPACE: "namespace",
  CAPSTAN_INTERNAL_TOKEN: "internalToken",
  CAPSTAN_KEY_VERIFIER: "keyVerifier",
  CAPSTAN_TRUSTED_PROXIES: { path: "trustedProxies", parse: envParsers.list },
  REDIS_URL: "redisUrl",
  ...redisEnvMap,
  CAPSTAN_LIMITER_REDIS_DOWN_POLICY: "limiter.redisDownPolicy",
  CAPSTAN_LIMITER_REDIS_TIMEOUT_MS: { path: "limiter.redisTimeoutMs", parse: envParsers.int },
  CAPSTAN_DATA_DIR: "dataDir",
  QDRANT_URL: "qdrant.url",
  QDRANT_API_KEY: "qdrant.apiKey",
  QDRANT_API_KEY_FILE: "qdrant.apiKeyFile",
  QDRANT_CA_FILE: "qdrant.caFile",
  QDRANT_TIMEOUT_MS: { path: "qdrant.timeoutMs", parse: envParsers.int },
  CAPSTAN_QDRANT_COLLECTION_PREFIX: "qdrant.collectionPrefix",
  CAPSTAN_QDRANT_STATUS_INTERVAL_MS: { path: "qdrant.statusIntervalMs", parse: envParsers.int },
  CAPSTAN_QDRANT_SHARD_NUMBER: { path: "qdrant.collection.shardNumber", parse: envParsers.int },
  CAPSTAN_QDRANT_REPLICATION_FACTOR: { path: "qdrant.collection.replicationFactor", parse: envParsers.int },
  CAPSTAN_QDRANT_WRITE_CONSISTENCY_FACTOR: { path: "qdrant.collection.writeConsistencyFactor", parse: envParsers.int },
  CAPSTAN_EMBEDDING_MODEL_DIR: "embedding.modelDir",
  CAPSTAN_EMBEDDING_THREADS: { path: "embedding.threads", parse: envParsers.int },
  CAPSTAN_EMBEDDING_QUERY_THREADS: { path: "embedding.queryThreads", parse: envParsers.int },
  CAPSTAN_EMBEDDING_DOCUMENTS_IDLE_S: { path: "embedding.documentsIdleSeconds", parse: envParsers.int },
  CAPSTAN_EMBEDDING_OPENAI_BASE_URL: "embedding.openai.baseURL",
  CAPSTAN_EMBEDDING_OPENAI_MODEL: "embedding.openai.model",
  CAPSTAN_EMBEDDING_OPENAI_API_KEY: "embedding.openai.apiKey",
  CAPSTAN_EMBEDDING_OPENAI_DIMENSIONS: { path: "embedding.openai.dimensions", parse: envParsers.int },
  CAPSTAN_EGRESS_ALLOWED_HOSTS: { path: "egressAllowedHosts", parse: envParsers.list },
  CAPSTAN_RERANK_URL: "rerank.external.url",
  CAPSTAN_RERANK_STYLE: "rerank.external.style",
  CAPSTAN_RERANK_MODEL: "rerank.external.model",
  CAPSTAN_RERANK_API_KEY: "rerank.external.apiKey",
};

/** Search's own prefixes: every variable under them must be one a Capstan process reads. */
export const SEARCH_STRICT_ENV = { prefixes: ["CAPSTAN_", "QDRANT_"], also: ["CAPSTAN_SEARCH_CONFIG"] };

/** The configuration: defaults, then the file (CAPSTAN_SEARCH_CONFIG), then env, then overrides. */
export function loadSearchConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides?: Record<string, unknown>,
): SearchConfig {
  return loadConfig(searchConfigSchema, {
    env,
    envMap: searchEnvMap,
    file: env.CAPSTAN_SEARCH_CONFIG,
    // An unknown CAPSTAN_ or QDRANT_ variable stops start-up, named with the nearest one search reads.
    strictEnv: SEARCH_STRICT_ENV,
    ...(overrides ? { overrides } : {}),
  });
}
