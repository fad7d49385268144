// buildApp(config, deps): the search service's Fastify app, apart from listen(), so tests drive
// it with inject() or over loopback and production runs the same app (main.ts).
import {
  buildBaseApp,
  createLogger,
  createRegistry,
  internalApp,
  type Logger,
  openApi,
  type Registry,
} from "@capstan/shared";
import { EgressGuard } from "@capstan/shared/egress";
import { limiterMetrics, RedisLimiter, WindowLimiter } from "@capstan/shared/limiter";
import { createRedisClient, type RedisClient, redisTarget } from "@capstan/shared/redis";
import type { ResourceView } from "@capstan/shared/resource-view";
import type { FastifyInstance } from "fastify";
import { SearchKeyAuthenticator } from "./auth/search-keys.ts";
import { type SearchConfig, type SearchConfigInput, searchConfigSchema } from "./config.ts";
import { createEmbedders } from "./embedding/factory.ts";
import type { Embedder } from "./embedding/provider.ts";
import { SearchError } from "./errors.ts";
import { installSearchErrors } from "./http-errors.ts";
import { Ingester } from "./ingest.ts";
import { KnowledgeBases } from "./knowledge-bases.ts";
import { type SearchMetrics, searchMetrics } from "./metrics.ts";
import { ExternalReranker } from "./rerank/external.ts";
import { HybridReranker } from "./rerank/hybrid.ts";
import type { Reranker } from "./rerank/types.ts";
import { documentRoutes } from "./routes/documents.ts";
import { type PublicDocumentRoutesOptions, publicDocumentRoutes } from "./routes/public-documents.ts";
import { type SearchRoutesOptions, searchRoutes } from "./routes/search.ts";
import { searchSchemas } from "./routes/search-schemas.ts";
import { SearchEngine } from "./search-engine.ts";
import { createStore } from "./store/factory.ts";
import { QdrantStore } from "./store/qdrant.ts";
import { exportClusterState } from "./store/qdrant-cluster.ts";
import type { VectorStore } from "./store/types.ts";

export interface SearchDeps {
  /** The read-only resource view (SearchKey, KnowledgeBase) fed by a FileSource or KubeSource. */
  view: ResourceView;
  /** Default: Qdrant when config.qdrant.url is set, else the embedded store (config.dataDir or memory). */
  store?: VectorStore;
  /** Default: the local model (+ the OpenAI-compatible provider when configured). Not closed by the app. */
  embedders?: Embedder[];
  /** Default: the external reranker when configured, else the hybrid reranker. */
  reranker?: Reranker;
  registry?: Registry;
  logger?: Logger;
  /** Clock for key validity (tests). */
  now?: () => number;
  /** A Redis client for the per-key limiter (not closed by the app); else one from config.redis(Url). */
  redis?: RedisClient;
}

export async function buildApp(input: SearchConfigInput | SearchConfig, deps: SearchDeps): Promise<FastifyInstance> {
  const config = searchConfigSchema.parse(input);
  const logger = deps.logger ?? createLogger({ name: "search", level: config.logLevel });
  const registry = deps.registry ?? createRegistry();
  const metrics = searchMetrics(registry);

  const backends = await openBackends(config, deps, logger, metrics);
  const services = searchServices(config, deps, backends, logger, metrics);
  const limits = rateLimits(config, deps, logger, registry);

  const app = baseApp(config, deps, backends.store, registry, logger);
  if (backends.store instanceof QdrantStore) exportClusterState(backends.store.cluster, metrics);
  const internal = internalApp(app);
  installSearchErrors(app, metrics);
  installSearchErrors(internal, metrics);
  registerRoutes(app, internal, { config, metrics, store: backends.store, limiter: limits.limiter, ...services });

  app.addHook("onClose", async () => {
    services.auth.close();
    services.kbs.close();
    if (backends.ownsStore) await backends.store.close();
    if (limits.ownsRedis) limits.redis?.disconnect();
    if (backends.ownsEmbedders) await Promise.all(backends.embedderList.map((e) => e.close()));
    await backends.egressDispatcher.close();
  });
  return app;
}

/** What search reads and calls: the embedders, the vector store and the rerankers (with what the app owns). */
interface Backends {
  egressDispatcher: ReturnType<EgressGuard["agent"]>;
  embedderList: Embedder[];
  ownsEmbedders: boolean;
  store: VectorStore;
  ownsStore: boolean;
  reranker: Reranker;
  /** The local reranker, also the fallback when the external one fails. */
  hybrid: HybridReranker;
}

/** The embedders, store and reranker the deps give, else made from the config. */
async function openBackends(
  config: SearchConfig,
  deps: SearchDeps,
  logger: Logger,
  metrics: SearchMetrics,
): Promise<Backends> {
  // The remote embedding and rerank endpoints are reached through the platform's egress policy.
  const egress = new EgressGuard({
    allowedHosts: config.egressAllowedHosts,
    onBlocked: (_stage, target, reason) => logger.warn({ target, reason }, "egress policy refused an endpoint"),
  });
  const egressDispatcher = egress.agent({ connections: 16, keepAliveTimeout: 30_000 });
  const embedderList = deps.embedders ?? (await createEmbedders(config, metrics, egressDispatcher));
  const store = deps.store ?? (await createStore(config, logger, metrics));

  const hybrid = new HybridReranker(config.rerank.vectorWeight);
  const external = config.rerank.external;
  const reranker =
    deps.reranker ??
    (external
      ? new ExternalReranker({ ...external, metrics: metrics.outbound, maxRetries: 2, dispatcher: egressDispatcher })
      : hybrid);
  return {
    egressDispatcher,
    embedderList,
    ownsEmbedders: deps.embedders === undefined,
    store,
    ownsStore: deps.store === undefined,
    reranker,
    hybrid,
  };
}

/** The knowledge bases, the key authenticator, the search engine and the ingester over the backends. */
function searchServices(
  config: SearchConfig,
  deps: SearchDeps,
  backends: Backends,
  logger: Logger,
  metrics: SearchMetrics,
) {
  const { store } = backends;
  const embedders = new Map(backends.embedderList.map((e) => [e.name, e]));
  const kbs = new KnowledgeBases(deps.view, store);
  const auth = new SearchKeyAuthenticator({
    view: deps.view,
    internalToken: config.internalToken,
    verifierKey: config.keyVerifier,
    ...(deps.now ? { now: deps.now } : {}),
  });
  const engine = new SearchEngine({
    kbs,
    embedders,
    store,
    reranker: backends.reranker,
    fallbackReranker: backends.hybrid,
    metrics,
    logger,
    candidateFactor: config.search.candidateFactor,
    minCandidates: config.search.minCandidates,
  });
  const ingester = new Ingester({ kbs, store, embedders, metrics, logger });
  return { kbs, auth, engine, ingester };
}

/** The per-key limiter: exact across replicas, the gateway's sliding-log limiter on the same Redis. */
function rateLimits(config: SearchConfig, deps: SearchDeps, logger: Logger, registry: Registry) {
  const target = redisTarget(config.redisUrl, config.redis);
  const ownsRedis = deps.redis === undefined && target !== undefined;
  const redis =
    deps.redis ??
    (target
      ? createRedisClient(target, logger, { commandTimeoutMs: Math.max(5_000, config.limiter.redisTimeoutMs + 1_000) })
      : undefined);
  const limiter = new WindowLimiter({
    redis: redis ? new RedisLimiter(redis, config.limiter) : undefined,
    windowMs: config.limiter.windowMs,
    policy: config.limiter.redisDownPolicy,
    timeoutMs: config.limiter.redisTimeoutMs,
    metrics: limiterMetrics(registry, "capstan_search"),
    logger,
    unavailable: () => new SearchError("SEARCH_ERR_LIMITER"),
    what: "search rate limits",
  });
  return { redis, ownsRedis, limiter };
}

/** The Fastify app with the platform's base: request metrics, health and readiness, the internal listener. */
function baseApp(config: SearchConfig, deps: SearchDeps, store: VectorStore, registry: Registry, logger: Logger) {
  return buildBaseApp({
    service: "search",
    registry,
    logger,
    bodyLimit: 1024 * 1024,
    // request.ip (checked against a SearchKey's allowed ranges): the socket's peer, or, when that
    // peer is one of the configured trusted proxies, X-Forwarded-For read from the right past them.
    trustProxy: config.trustedProxies.length > 0 ? config.trustedProxies : false,
    // Documents API, the internal caller's search, metrics and health on the internal instance
    // only (internalApp(app), listened by listenInternal in start.ts).
    internal: true,
    notReady: () =>
      deps.view.hasSynced("SearchKey", "KnowledgeBase") ? undefined : "resource view has not synced yet",
    // A Qdrant cluster's shards and their replicas' states (not a readiness condition: with two
    // copies of each shard a lost peer leaves search answering).
    readyDetails: () => (store instanceof QdrantStore ? { qdrant: store.cluster.last } : {}),
  });
}

/** The published API (OpenAPI, search, public documents) and the internal listener's routes. */
function registerRoutes(
  app: FastifyInstance,
  internal: FastifyInstance,
  parts: Omit<SearchRoutesOptions, "callers"> & PublicDocumentRoutesOptions,
) {
  const { config, auth, engine, metrics, limiter, kbs, ingester, store } = parts;
  app.register(openApi, {
    title: "Capstan search",
    description:
      "Semantic search over knowledge bases. Every answer, success or error, is the {code, message, data} envelope (code = the HTTP status, data null on error).",
    version: "v1",
    schemas: searchSchemas,
    securitySchemes: { searchKey: { type: "http", scheme: "bearer", description: "A SearchKey's key" } },
    tags: [
      { name: "search", description: "Knowledge search" },
      { name: "documents", description: "Documents uploaded to knowledge bases (keys with the write permission)" },
    ],
  });
  app.register(searchRoutes, { prefix: "/v1/rag", callers: "keys", config, auth, engine, metrics, limiter });
  app.register(publicDocumentRoutes, {
    prefix: "/v1/knowledge-bases",
    config,
    auth,
    metrics,
    limiter,
    kbs,
    ingester,
    store,
  });
  // The internal listener: the documents API (ingestion) and the internal caller's search (the
  // gateway's retrieval), the only routes that accept the internal token, documented apart.
  internal.register(openApi, {
    title: "Capstan search, internal port",
    description:
      "The documents API the operator ingests knowledge bases through, and the search the gateway's agents call, with the internal token. Not the published contract; every answer is the {code, message, data} envelope.",
    version: "v1",
    schemas: searchSchemas,
    securitySchemes: {
      internalToken: { type: "http", scheme: "bearer", description: "The platform's internal token" },
    },
    tags: [
      { name: "documents", description: "Knowledge bases and their documents (the operator's ingestion)" },
      { name: "search", description: "Knowledge search for the gateway's agents" },
    ],
    page: false,
  });
  internal.register(documentRoutes, { prefix: "/internal/v1", config, auth, ingester, store });
  internal.register(searchRoutes, { prefix: "/v1/rag", callers: "internal", config, auth, engine, metrics, limiter });
}
