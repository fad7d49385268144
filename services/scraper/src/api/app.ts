// The scraper API: POST /scrape, POST /scrape/bulk, POST /search, GET /health, plus /healthz,
// /readyz and /metrics on the admin port only (listenInternal in main.ts; the API's port answers
// 404 for them). buildApp() wires it; main.ts listens.
import {
  buildBaseApp,
  createLogger,
  createRegistry,
  type Logger,
  onInternalPort,
  type Registry,
} from "@capstan/shared";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { apiKeyCheck } from "../api-key.ts";
import type { ScraperConfig } from "../config.ts";
import { isScraperError, ScraperError } from "../errors.ts";
import { installErrorHandlers, sendError, zodMessage } from "../http-errors.ts";
import { Limiter } from "../limiter.ts";
import { apiMetrics } from "../metrics.ts";
import { SsrfGuard } from "../ssrf/guard.ts";
import { type LlmClient, llmClient } from "./llm.ts";
import { httpRenderClient, type RenderClient } from "./render-client.ts";
import { bulkBodySchema, scrapeBodySchema, searchBodySchema } from "./schemas.ts";
import { type ScrapeData, type ScrapeInput, ScrapeService } from "./scrape-service.ts";
import { webSearch } from "./search.ts";

export interface AppDeps {
  logger?: Logger;
  registry?: Registry;
  /** Default: HTTP to config.renderUrl. */
  renderClient?: RenderClient;
  guard?: SsrfGuard;
  llm?: LlmClient;
}

export type BulkEntry =
  | { url: string; success: true; data: ScrapeData }
  | { url: string; success: false; error: string; code: string; status: number };

/** The reference's liveness check, answered without a key on the API's port. */
const PUBLIC_ROUTES = new Set(["/health"]);

function abortOnClose(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.on("close", () => {
    if (!reply.raw.writableEnded) controller.abort(new ScraperError("TIMEOUT", [0, "client went away"]));
  });
  return controller.signal;
}

export function buildApp(config: ScraperConfig, deps: AppDeps = {}): FastifyInstance {
  const logger = deps.logger ?? createLogger({ name: "scraper", level: config.logLevel });
  const registry = deps.registry ?? createRegistry();
  const metrics = apiMetrics(registry);
  const renderClient = deps.renderClient ?? httpRenderClient(config.renderUrl, metrics, config.apiKey);
  const guard =
    deps.guard ??
    new SsrfGuard({
      allowedHosts: config.allowedHosts,
      onBlocked: (stage, target, reason) => logger.warn({ stage, target, reason }, "SSRF guard refused a target"),
    });
  const llm = deps.llm ?? llmClient(config, metrics);
  const limiter = new Limiter(config.workerConcurrency, config.maxConcurrentRequests, (_running, queued) =>
    metrics.queueDepth.set(queued),
  );
  const service = new ScrapeService({ config, guard, limiter, renderClient, llm, metrics, logger });
  const startedAt = Date.now();

  let rendererReady = false;
  const probe = async () => {
    rendererReady = await renderClient.probe();
  };
  void probe();
  const probeTimer = setInterval(() => void probe(), 5_000);
  probeTimer.unref();

  const app = buildBaseApp({
    service: "scraper",
    registry,
    logger,
    bodyLimit: 1024 * 1024,
    internal: { prefixes: [] },
    notReady: () => (rendererReady ? undefined : `rendering service at ${config.renderUrl} is not ready`),
  });
  installErrorHandlers(app);
  app.addHook("onClose", async () => {
    clearInterval(probeTimer);
    if (!deps.renderClient) await renderClient.close();
  });

  const keyOk = apiKeyCheck(config.apiKey);
  app.addHook("onRequest", async (req: FastifyRequest, reply: FastifyReply) => {
    // The admin port serves only metrics and health, and stays inside the cluster.
    if (!config.authEnabled || onInternalPort(req.raw) || PUBLIC_ROUTES.has(req.routeOptions.url ?? "")) return;
    if (!keyOk?.(req.headers.authorization)) {
      reply.header("www-authenticate", 'Bearer realm="scraper"');
      return sendError(reply, new ScraperError("UNAUTHORIZED"));
    }
  });

  app.get("/health", async () => ({
    status: "ok",
    service: "capstan-scraper",
    uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
    renderer: rendererReady ? "ready" : "not ready",
    queue: { running: limiter.active, queued: limiter.queued, maxQueued: limiter.maxQueue },
  }));

  app.post("/scrape", async (req, reply) => {
    const parsed = scrapeBodySchema.safeParse(req.body ?? {});
    if (!parsed.success) return sendError(reply, new ScraperError("BAD_REQUEST", [zodMessage(parsed.error)]));
    const data = await service.scrape(parsed.data as ScrapeInput, { signal: abortOnClose(reply) });
    return { success: true, data };
  });

  async function runMany(inputs: ScrapeInput[], signal: AbortSignal): Promise<BulkEntry[]> {
    const results: BulkEntry[] = new Array(inputs.length);
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < inputs.length; i = next++) {
        const input = inputs[i] as ScrapeInput;
        try {
          results[i] = { url: input.url, success: true, data: await service.scrape(input, { signal, bulk: true }) };
        } catch (err) {
          const e = isScraperError(err) ? err : new ScraperError("INTERNAL");
          results[i] = { url: input.url, success: false, error: e.message, code: e.code, status: e.status };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(config.workerConcurrency, inputs.length) }, worker));
    return results;
  }

  app.post("/scrape/bulk", async (req, reply) => {
    const parsed = bulkBodySchema.safeParse(req.body ?? {});
    if (!parsed.success) return sendError(reply, new ScraperError("BAD_REQUEST", [zodMessage(parsed.error)]));
    const { urls, pageOptions, extractors } = parsed.data;
    if (urls.length > config.bulkMaxUrls) {
      return sendError(reply, new ScraperError("BAD_REQUEST", [`at most ${config.bulkMaxUrls} URLs per bulk request`]));
    }
    if (limiter.full) throw new ScraperError("QUEUE_FULL", [], { retryAfter: 1 });
    const data = await runMany(
      urls.map((url) => ({ url, pageOptions, extractors })),
      abortOnClose(reply),
    );
    const succeeded = data.filter((d) => d.success).length;
    return { success: true, total: data.length, succeeded, failed: data.length - succeeded, data };
  });

  app.post("/search", async (req, reply) => {
    const parsed = searchBodySchema.safeParse(req.body ?? {});
    if (!parsed.success) return sendError(reply, new ScraperError("BAD_REQUEST", [zodMessage(parsed.error)]));
    const { query, limit, scrape, pageOptions } = parsed.data;
    const signal = abortOnClose(reply);
    const results = await webSearch(config, metrics, llm, query, limit, signal);
    if (!scrape) return { success: true, data: results };
    if (limiter.full) throw new ScraperError("QUEUE_FULL", [], { retryAfter: 1 });
    const pages = await runMany(
      results.map((r) => ({ url: r.url, pageOptions })),
      signal,
    );
    return { success: true, data: results.map((r, i) => ({ ...r, page: pages[i] })) };
  });

  return app;
}
