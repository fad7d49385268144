// buildApp(config, deps): the gateway as a Fastify app, apart from listen(), so tests drive the
// same app production runs. Routes: POST /api/v1/chat/completions, GET /api/v1/models[/:model],
// GET /api/v1/history, plus /healthz, /readyz and /metrics from buildBaseApp.
import { buildBaseApp, createLogger, createRegistry, type Logger, type Registry } from "@capstan/shared";
import type { Agent } from "@capstan/shared/api";
import { createRedis, RedisLimiter } from "@capstan/shared/limiter";
import type { ResourceView } from "@capstan/shared/resource-view";
import type { FastifyInstance } from "fastify";
import type { Redis } from "ioredis";
import { ExtractiveAgent } from "./agents/extractive-agent.ts";
import { LlmAgent } from "./agents/llm-agent.ts";
import { type Retriever, SearchServiceClient } from "./agents/retrieval.ts";
import { loadTokenizer } from "./agents/tokens.ts";
import type { AgentMode, ChatAgent } from "./agents/types.ts";
import { UpstreamClient } from "./agents/upstream.ts";
import { ChannelDirectory } from "./channels.ts";
import { type GatewayConfig, type GatewayConfigInput, parseGatewayConfig } from "./config.ts";
import { type HistoryStore, MemoryHistoryStore, RedisHistoryStore } from "./history/store.ts";
import { installErrorHandling } from "./http/error-handler.ts";
import { installRequestContext } from "./http/request-context.ts";
import { QpmLimiter } from "./limiter/limiter.ts";
import { type GatewayMetrics, gatewayMetrics } from "./metrics.ts";
import { registerChatRoute } from "./routes/chat.ts";
import { registerMetaRoutes } from "./routes/meta.ts";
import { ChainSecretResolver, EnvSecretResolver, FileSecretResolver, type SecretResolver } from "./secrets.ts";

export interface GatewayDeps {
  /** The read-only view of AccessChannels and Agents (FileSource or KubeSource feeds it). */
  view: ResourceView;
  /** A Redis client to use (not closed by the app); otherwise one is made from config.redisUrl. */
  redis?: Redis;
  secrets?: SecretResolver;
  retriever?: Retriever;
  logger?: Logger;
  registry?: Registry;
  /** Clock for key expiry (ms since epoch). */
  now?: () => number;
}

export interface Gateway {
  config: GatewayConfig;
  view: ResourceView;
  channels: ChannelDirectory;
  limiter: QpmLimiter;
  history: HistoryStore;
  metrics: GatewayMetrics;
  logger: Logger;
  now: () => number;
  agentFor(agent: Agent): ChatAgent;
}

export function modeOf(agent: Agent): AgentMode {
  if (!agent.spec.provider) return "extractive";
  return agent.spec.knowledge ? "rag" : "llm";
}

export function buildApp(configInput: GatewayConfig | GatewayConfigInput, deps: GatewayDeps): FastifyInstance {
  const config = parseGatewayConfig(configInput);
  const startedAt = Date.now();
  const logger = deps.logger ?? createLogger({ name: "gateway", level: config.logLevel });
  const registry = deps.registry ?? createRegistry("gateway");
  const metrics = gatewayMetrics(registry);
  const ownRedis =
    !deps.redis && config.redisUrl
      ? createRedis(config.redisUrl, logger, Math.max(5_000, config.limiter.redisTimeoutMs + 1_000))
      : undefined;
  const redis = deps.redis ?? ownRedis;

  const limiter = new QpmLimiter({
    redis: redis ? new RedisLimiter(redis, config.limiter) : undefined,
    windowMs: config.limiter.windowMs,
    policy: config.limiter.redisDownPolicy,
    timeoutMs: config.limiter.redisTimeoutMs,
    metrics,
    logger,
  });
  const history: HistoryStore = redis
    ? new RedisHistoryStore(redis, config.history)
    : new MemoryHistoryStore(config.history);
  if (!redis) logger.warn("no REDIS_URL: conversation history is kept in process memory only (lost on restart)");

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
  const upstream = new UpstreamClient({ ...config.upstream, metrics });
  const agents: Record<AgentMode, ChatAgent> = {
    llm: new LlmAgent("llm", { upstream, retriever, secrets }),
    rag: new LlmAgent("rag", { upstream, retriever, secrets }),
    extractive: new ExtractiveAgent(retriever),
  };
  const channels = new ChannelDirectory(deps.view);
  // The tokenizer's ranks take a moment to load: start now so the first local answer does not wait.
  loadTokenizer().catch((err: Error) => logger.error({ err: err.message }, "tokenizer failed to load"));

  const app = buildBaseApp({
    service: "gateway",
    registry,
    logger,
    bodyLimit: config.bodyLimitBytes,
    notReady: () =>
      deps.view.hasSynced("AccessChannel", "Agent")
        ? limiter.notReady(startedAt, config.limiter.readyWaitMs, Date.now())
        : "resources not loaded yet",
  });
  const gateway: Gateway = {
    config,
    view: deps.view,
    channels,
    limiter,
    history,
    metrics,
    logger,
    now: deps.now ?? Date.now,
    agentFor: (agent) => agents[modeOf(agent)],
  };
  installErrorHandling(app, config.bodyLimitBytes);
  installRequestContext(app, gateway);
  registerChatRoute(app, gateway);
  registerMetaRoutes(app, gateway);

  app.addHook("onClose", async () => {
    channels.close();
    await Promise.allSettled([upstream.close(), searchClient?.close()]);
    if (ownRedis) ownRedis.disconnect();
  });
  return app;
}
