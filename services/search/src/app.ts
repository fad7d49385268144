// buildApp(config, deps): the search service's Fastify app, apart from listen(), so tests drive
// it with inject() or over loopback and production runs the same app (main.ts).
import {
  allowedMethods,
  buildBaseApp,
  createLogger,
  createRegistry,
  internalApp,
  type Logger,
  lingerOnRefusedBody,
  openApi,
  type Registry,
} from "@capstan/shared";
import { EgressGuard } from "@capstan/shared/egress";
import { limiterMetrics, RedisLimiter, WindowLimiter } from "@capstan/shared/limiter";
import { createRedisClient, type RedisClient, redisTarget } from "@capstan/shared/redis";
import type { ResourceView } from "@capstan/shared/resource-view";
import type { FastifyError, FastifyInstance } from "fastify";
import { SearchKeyAuthenticator } from "./auth/search-keys.ts";
import { type SearchConfig, type SearchConfigInput, searchConfigSchema } from "./config.ts";
import { createEmbedders } from "./embedding/factory.ts";
import type { Embedder } from "./embedding/provider.ts";
import { errorEnvelope, SearchError } from "./errors.ts";
import { Ingester } from "./ingest.ts";
import { KnowledgeBases } from "./knowledge-bases.ts";
import { type SearchMetrics, searchMetrics } from "./metrics.ts";
import { ExternalReranker } from "./rerank/external.ts";
import { HybridReranker } from "./rerank/hybrid.ts";
import type { Reranker } from "./rerank/types.ts";
import { documentRoutes } from "./routes/documents.ts";
import { publicDocumentRoutes } from "./routes/public-documents.ts";
import { searchRoutes } from "./routes/search.ts";
import { searchSchemas } from "./routes/search-schemas.ts";
import { SearchEngine } from "./search-engine.ts";
import { createStore } from "./store/factory.ts";
import { QdrantStore } from "./store/qdrant.ts";
import { exportClusterState } from "./store/qdrant-cluster.ts";
import { StoreError, type VectorStore } from "./store/types.ts";

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

  // The remote embedding and rerank endpoints are reached through the platform's egress policy.
  const egress = new EgressGuard({
    allowedHosts: config.egressAllowedHosts,
    onBlocked: (_stage, target, reason) => logger.warn({ target, reason }, "egress policy refused an endpoint"),
  });
  const egressDispatcher = egress.agent({ connections: 16, keepAliveTimeout: 30_000 });
  const ownsEmbedders = deps.embedders === undefined;
  const embedderList = deps.embedders ?? (await createEmbedders(config, metrics, egressDispatcher));
  const embedders = new Map(embedderList.map((e) => [e.name, e]));
  const ownsStore = deps.store === undefined;
  const store = deps.store ?? (await createStore(config, logger, metrics));

  const hybrid = new HybridReranker(config.rerank.vectorWeight);
  const external = config.rerank.external;
  const reranker =
    deps.reranker ??
    (external
      ? new ExternalReranker({ ...external, metrics: metrics.outbound, maxRetries: 2, dispatcher: egressDispatcher })
      : hybrid);

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
    reranker,
    fallbackReranker: hybrid,
    metrics,
    logger,
    candidateFactor: config.search.candidateFactor,
    minCandidates: config.search.minCandidates,
  });
  const ingester = new Ingester({ kbs, store, embedders, metrics, logger });
  const target = redisTarget(config.redisUrl, config.redis);
  const ownsRedis = deps.redis === undefined && target !== undefined;
  const redis =
    deps.redis ??
    (target
      ? createRedisClient(target, logger, { commandTimeoutMs: Math.max(5_000, config.limiter.redisTimeoutMs + 1_000) })
      : undefined);
  // Per key, exact across replicas: the gateway's sliding-log limiter on the same Redis.
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

  const app = buildBaseApp({
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
  if (store instanceof QdrantStore) exportClusterState(store.cluster, metrics);

  const internal = internalApp(app);
  installErrors(app, metrics);
  installErrors(internal, metrics);

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
  // gateway's retrieval), the only routes that accept the internal token.
  internal.register(documentRoutes, { prefix: "/internal/v1", config, auth, ingester, store });
  internal.register(searchRoutes, { prefix: "/v1/rag", callers: "internal", config, auth, engine, metrics, limiter });

  app.addHook("onClose", async () => {
    auth.close();
    kbs.close();
    if (ownsStore) await store.close();
    if (ownsRedis) redis?.disconnect();
    if (ownsEmbedders) await Promise.all(embedderList.map((e) => e.close()));
    await egressDispatcher.close();
  });
  return app;
}

/** The {code, message, data} envelope for every error and unknown route of one listener. */
function installErrors(app: FastifyInstance, metrics: SearchMetrics): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    let e: SearchError;
    if (err instanceof SearchError) e = err;
    // The vector store down, slow or refusing our key (any call, not only the query): 503.
    else if (err instanceof StoreError) e = new SearchError("SEARCH_ERR_STORE", { detail: err.message });
    else if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      e = new SearchError("SEARCH_ERR_BODY_TOO_LARGE", { limit: req.routeOptions.bodyLimit ?? 1024 * 1024 });
      lingerOnRefusedBody(req, reply);
    } else if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
      e = new SearchError("SEARCH_ERR_MEDIA_TYPE", { got: String(req.headers["content-type"] ?? "").slice(0, 100) });
    } else if (err.statusCode === 400 || err.code === "FST_ERR_CTP_EMPTY_JSON_BODY") {
      e = new SearchError("SEARCH_ERR_BODY_INVALID", { detail: "body: not valid JSON" });
    } else {
      req.log.error({ err }, "unhandled error");
      e = new SearchError("SEARCH_ERR_INTERNAL");
    }
    metrics.errors.inc({ code: e.code });
    return reply.code(e.status).headers(e.headers).header("x-capstan-error", e.code).send(errorEnvelope(e));
  });
  // JSON only: Fastify would otherwise hand a text/plain body to the schema as a string (a 400).
  app.removeContentTypeParser("text/plain");
  app.setNotFoundHandler((req, reply) => {
    const url = req.url.split("?")[0] ?? "";
    // Each listener knows its own routes only: the other's paths are unknown there (404).
    const allow = allowedMethods(app, url);
    if (allow.length > 0) {
      const e = new SearchError("SEARCH_ERR_METHOD", { method: req.method, url, allow: allow.join(" or ") });
      metrics.errors.inc({ code: e.code });
      return reply.code(405).header("allow", allow.join(", ")).header("x-capstan-error", e.code).send(errorEnvelope(e));
    }
    const e = new SearchError("SEARCH_ERR_NOT_FOUND", { detail: `${req.method} ${url}` });
    metrics.errors.inc({ code: e.code });
    return reply.code(404).header("x-capstan-error", e.code).send(errorEnvelope(e));
  });
}
