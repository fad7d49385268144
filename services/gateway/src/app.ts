// buildApp(config, deps): the gateway as a Fastify app, apart from listen(), so tests drive the
// same app production runs. It builds the gateway's parts (limiter, history, agents, ...) and
// hands them to the /api/v1 plugin (routes/api-v1.ts) as options: POST /api/v1/chat/completions,
// GET /api/v1/models[/:model], GET /api/v1/history; the published contract at /openapi.json (page:
// /docs); plus /healthz, /readyz and /metrics from buildBaseApp on the internal instance only
// (internalApp(app), listened by listenInternal in start.ts; the public port has no such routes).
import {
  buildBaseApp,
  createLogger,
  createRegistry,
  internalApp,
  type Logger,
  openApi,
  type Registry,
} from "@capstan/shared";
import { RedisLimiter } from "@capstan/shared/limiter";
import { createRedisClient, type RedisClient, redisTarget } from "@capstan/shared/redis";
import type { ResourceView } from "@capstan/shared/resource-view";
import type { FastifyInstance } from "fastify";
import { ExtractiveAgent } from "./agents/extractive-agent.ts";
import { LlmAgent } from "./agents/llm-agent.ts";
import { type Retriever, SearchServiceClient } from "./agents/retrieval.ts";
import { UpstreamRouter } from "./agents/router.ts";
import { type AgentMode, type ChatAgent, modeOf } from "./agents/types.ts";
import { UpstreamClient } from "./agents/upstream.ts";
import { ChannelDirectory } from "./channels.ts";
import { type GatewayConfig, type GatewayConfigInput, parseGatewayConfig } from "./config.ts";
import { BufferedHistoryStore } from "./history/buffered.ts";
import { type HistoryStore, MemoryHistoryStore, RedisHistoryStore } from "./history/store.ts";
import { Drain } from "./http/drain.ts";
import { installGatewayErrors } from "./http/error-handler.ts";
import { gatewaySchemas } from "./http/schemas.ts";
import { QpmLimiter } from "./limiter/limiter.ts";
import { TokenAccounts } from "./limiter/token-limiter.ts";
import { UsageReader } from "./limiter/usage-reader.ts";
import { gatewayMetrics } from "./metrics.ts";
import { RedisBreaker } from "./redis/breaker.ts";
import { apiV1 } from "./routes/api-v1.ts";
import { internalRoutes } from "./routes/internal.ts";
import { ChainSecretResolver, EnvSecretResolver, FileSecretResolver, type SecretResolver } from "./secrets.ts";

export interface GatewayDeps {
  /** The read-only view of AccessChannels and Agents (FileSource or KubeSource feeds it). */
  view: ResourceView;
  /** A Redis client to use (not closed by the app); otherwise one is made from config.redis(Url). */
  redis?: RedisClient;
  secrets?: SecretResolver;
  retriever?: Retriever;
  logger?: Logger;
  registry?: Registry;
  /** Clock for key expiry (ms since epoch). */
  now?: () => number;
}

type Metrics = ReturnType<typeof gatewayMetrics>;

/** Redis and what stands on it: the breaker in front, the QPM limiter, token accounts, history. */
function redisParts(config: GatewayConfig, deps: GatewayDeps, logger: Logger, metrics: Metrics) {
  const target = redisTarget(config.redisUrl, config.redis);
  const ownRedis =
    !deps.redis && target
      ? createRedisClient(target, logger, { commandTimeoutMs: Math.max(5_000, config.limiter.redisTimeoutMs + 1_000) })
      : undefined;
  const redis = deps.redis ?? ownRedis;
  const breaker = redis
    ? new RedisBreaker({
        redis,
        timeoutMs: config.limiter.redisTimeoutMs,
        failureThreshold: config.limiter.breakerFailures,
        probeIntervalMs: config.limiter.breakerProbeMs,
        metrics,
        logger,
      })
    : undefined;
  const shared = { windowMs: config.limiter.windowMs, policy: config.limiter.redisDownPolicy, metrics, logger };
  const limiter = new QpmLimiter({
    ...shared,
    redis: redis && breaker ? { limiter: new RedisLimiter(redis, config.limiter), breaker } : undefined,
    replicas: config.limiter.replicas,
    startWaitMs: config.limiter.redisTimeoutMs,
  });
  const tokens = new TokenAccounts({
    ...shared,
    redis: redis && breaker ? { client: redis, breaker } : undefined,
    replicas: config.limiter.replicas,
    keyPrefix: config.usage.keyPrefix,
    usageRetentionHours: config.usage.retentionHours,
  });
  const buffered =
    redis && breaker
      ? new BufferedHistoryStore(new RedisHistoryStore(redis, config.history), breaker, {
          maxBuffered: config.history.bufferEntries,
          overflowLogIntervalMs: config.history.overflowLogIntervalMs,
          metrics,
          logger,
        })
      : undefined;
  const history: HistoryStore = buffered ?? new MemoryHistoryStore(config.history);
  if (!redis) logger.warn("no REDIS_URL: conversation history is kept in process memory only (lost on restart)");
  const usage = redis && breaker ? new UsageReader({ redis, breaker, keyPrefix: config.usage.keyPrefix }) : undefined;
  return { ownRedis, breaker, limiter, tokens, buffered, history, usage };
}

/** The agents and what they call: search (retrieval) and the LLM upstreams with their keys. */
function agentParts(config: GatewayConfig, deps: GatewayDeps, logger: Logger, metrics: Metrics) {
  const secrets =
    deps.secrets ??
    new ChainSecretResolver([
      ...(config.secretsDir ? [new FileSecretResolver(config.secretsDir)] : []),
      new EnvSecretResolver(),
    ]);
  const searchClient = deps.retriever
    ? undefined
    : new SearchServiceClient({
        url: config.search.url,
        internalToken: config.search.internalToken,
        timeoutMs: config.search.timeoutMs,
        maxRetries: config.search.maxRetries,
        metrics,
      });
  const retriever = deps.retriever ?? (searchClient as SearchServiceClient);
  const upstream = new UpstreamClient({
    ...config.upstream,
    metrics,
    onBlocked: (target, reason) => logger.warn({ target, reason }, "egress policy refused a provider address"),
  });
  const router = new UpstreamRouter({ upstream, secrets, metrics });
  const agents: Record<AgentMode, ChatAgent> = {
    llm: new LlmAgent("llm", { router, retriever }),
    rag: new LlmAgent("rag", { router, retriever }),
    extractive: new ExtractiveAgent(retriever),
  };
  return { searchClient, upstream, router, agents };
}

/** /readyz's conditions beyond ready or not: the limiter's mode, Redis' breaker, history waiting. */
function readyConditions(parts: ReturnType<typeof redisParts>) {
  const { limiter, breaker, buffered } = parts;
  return [
    limiter.condition(),
    ...(breaker
      ? [
          {
            type: "RedisAvailable",
            status: breaker.closed ? "True" : "False",
            reason: breaker.closed ? "CircuitClosed" : "CircuitOpen",
            message: `circuit ${breaker.state} since ${new Date(breaker.changedAt).toISOString()}`,
          },
        ]
      : []),
    ...(buffered && buffered.buffered > 0
      ? [
          {
            type: "HistoryWritten",
            status: "False",
            reason: "Buffered",
            message: `${buffered.buffered} exchange(s) wait for Redis`,
          },
        ]
      : []),
  ];
}

/** The published contract: /openapi.json and its /docs page. */
function registerOpenApi(app: FastifyInstance): void {
  app.register(openApi, {
    title: "Capstan gateway",
    description:
      "OpenAI-compatible chat completions: the agent bound to the channel key answers. Errors are OpenAI error objects.",
    version: "v1",
    schemas: gatewaySchemas,
    securitySchemes: {
      channelKey: { type: "http", scheme: "bearer", description: "An AccessChannel's key" },
    },
    tags: [
      { name: "chat", description: "Chat completions" },
      { name: "models", description: "The agent bound to the key, as a model" },
    ],
  });
}

/** The internal port's document (the operator's and the console's calls), at its /openapi.json. */
function registerInternalOpenApi(internal: FastifyInstance): void {
  internal.register(openApi, {
    title: "Capstan gateway, internal port",
    description:
      "What the operator and the console read from each gateway replica: usage, budget spend and upstream breakers. Not the published contract; errors are OpenAI error objects.",
    version: "v1",
    schemas: gatewaySchemas,
    tags: [{ name: "internal", description: "Read by the operator and the console" }],
    page: false,
  });
}

export function buildApp(configInput: GatewayConfig | GatewayConfigInput, deps: GatewayDeps): FastifyInstance {
  const config = parseGatewayConfig(configInput);
  const startedAt = Date.now();
  const logger = deps.logger ?? createLogger({ name: "gateway", level: config.logLevel });
  const registry = deps.registry ?? createRegistry();
  const metrics = gatewayMetrics(registry);
  const redis = redisParts(config, deps, logger, metrics);
  const { limiter, tokens, history, breaker, buffered } = redis;
  const { searchClient, upstream, router, agents } = agentParts(config, deps, logger, metrics);
  const channels = new ChannelDirectory(deps.view, config.keyVerifier);
  const drain = new Drain();

  const app = buildBaseApp({
    service: "gateway",
    registry,
    logger,
    bodyLimit: config.bodyLimitBytes,
    internal: true,
    notReady: () => {
      if (drain.draining) return "shutting down";
      return deps.view.hasSynced("AccessChannel", "Agent")
        ? limiter.notReady(startedAt, config.limiter.readyWaitMs, Date.now())
        : "resources not loaded yet";
    },
    readyDetails: () => ({ conditions: readyConditions(redis) }),
  });
  // Both listeners answer errors in the OpenAI shape.
  for (const a of [app, internalApp(app)]) installGatewayErrors(a, config.bodyLimitBytes);
  // While draining, answers close their connection, so clients reconnect to another replica.
  app.addHook("onSend", async (_req, reply) => {
    if (drain.draining) reply.header("connection", "close");
  });
  app.decorate("gatewayDrain", drain);
  registerOpenApi(app);
  app.register(apiV1, {
    prefix: "/api/v1",
    channels,
    limiter,
    tokens,
    history,
    breaker,
    drain,
    metrics,
    now: deps.now ?? Date.now,
    agentFor: (agent) => agents[modeOf(agent)],
  });
  registerInternalOpenApi(internalApp(app));
  internalApp(app).register(internalRoutes, { prefix: "/internal/v1", router, view: deps.view, usage: redis.usage });

  // Runs after the server has closed and every request has ended (Fastify closes the server in
  // the onClose hook it adds last, and runs onClose hooks last-added first).
  app.addHook("onClose", async () => {
    channels.close();
    limiter.close();
    await Promise.allSettled([upstream.close(), searchClient?.close(), buffered?.flush(), tokens.close()]);
    if (buffered && buffered.buffered > 0) {
      logger.warn({ lost: buffered.buffered }, "history buffer not written before exit (Redis unavailable)");
    }
    buffered?.close();
    breaker?.close();
    redis.ownRedis?.disconnect();
  });
  return app;
}
