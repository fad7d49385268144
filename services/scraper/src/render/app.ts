// The rendering service: GET /scrape (readiness probe) and POST /scrape (render one URL, wire
// format in wire.ts), plus /healthz, /readyz and /metrics. Runs in the API's process in
// standalone mode (bound to loopback) and as its own container beside the API in a cluster.
// Only the scraper API may render: with an API key configured, POST /scrape needs the same key
// (the API sends it); without one, it answers loopback callers only (the API beside it). The
// port is no way around the API's authentication. GET /scrape, the probe, renders nothing.
// Schema first: the request is validated (a bad one is 400 BAD_REQUEST naming the field) and the
// answers serialised by the wire schemas (wire.ts) the API's client parses them with.
import {
  buildBaseApp,
  createLogger,
  createRegistry,
  type Logger,
  openApi,
  type Registry,
  schemaRegistry,
} from "@capstan/shared";
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { apiKeyCheck } from "../api-key.ts";
import type { ScraperConfig } from "../config.ts";
import { ScraperError } from "../errors.ts";
import { bodyValidator, installErrorHandlers, sendError } from "../http-errors.ts";
import { renderMetrics } from "../metrics.ts";
import type { SsrfGuard } from "../ssrf/guard.ts";
import { Renderer } from "./renderer.ts";
import { type RenderProbe, renderProbeSchema, renderRequestSchema, renderResponseSchema } from "./wire.ts";

type ZodApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/** A peer address on this host: 127.0.0.0/8, ::1, or either IPv4-mapped. */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith("::ffff:") ? address.slice(7) : address;
  return v4.startsWith("127.") || address === "::1";
}

export interface RenderServiceDeps {
  logger?: Logger;
  registry?: Registry;
  guard?: SsrfGuard;
}

export interface RenderService {
  app: FastifyInstance;
  renderer: Renderer;
  /** Launches Chromium and opens the page pool; call before listen(). */
  start(opts?: { warm?: boolean }): Promise<void>;
  close(): Promise<void>;
}

export function buildRenderService(config: ScraperConfig, deps: RenderServiceDeps = {}): RenderService {
  const logger = deps.logger ?? createLogger({ name: "scraper-render", level: config.logLevel });
  const registry = deps.registry ?? createRegistry();
  const metrics = renderMetrics(registry);
  const renderer = new Renderer(config, { logger, metrics, ...(deps.guard ? { guard: deps.guard } : {}) });
  const base = buildBaseApp({
    service: "scraper-render",
    registry,
    logger,
    bodyLimit: 256 * 1024,
    notReady: () => (renderer.pool.connected ? undefined : "browser not connected"),
  });
  installErrorHandlers(base);
  base.register(openApi, {
    title: "Capstan scraper, rendering service",
    description:
      "Renders one page in Chromium for the scraper API beside it (the only caller: with an API key configured it must send it; without one, only loopback callers). Not the published contract; errors are the scraper's {success:false,error}.",
    version: "v1",
    schemas: schemaRegistry(),
    securitySchemes: { apiKey: { type: "http", scheme: "bearer", description: "The scraper's API key, when set" } },
    page: false,
  });
  base.register(async (plain) => renderRoutes(plain.withTypeProvider<ZodTypeProvider>(), config, renderer));
  return {
    app: base,
    renderer,
    start: (opts) => renderer.start(opts),
    close: async () => {
      await base.close();
      await renderer.close();
    },
  };
}

/** GET /scrape (the probe) and POST /scrape (one render), schema first. */
function renderRoutes(app: ZodApp, config: ScraperConfig, renderer: Renderer): void {
  app.setValidatorCompiler(bodyValidator);

  const keyOk = apiKeyCheck(config.apiKey);
  const requireKey = async (req: FastifyRequest, reply: FastifyReply) => {
    // With a key, only callers that send it; without one, only callers on this host (the API
    // beside it in the pod or process): in a pod the port listens on the pod's address for the
    // kubelet's probe, and nothing else may render through it.
    const allowed = keyOk ? keyOk(req.headers.authorization) : isLoopback(req.socket.remoteAddress);
    if (!allowed) {
      reply.header("www-authenticate", 'Bearer realm="scraper-render"');
      return sendError(reply, new ScraperError("UNAUTHORIZED"));
    }
  };

  const probe = { response: { 200: renderProbeSchema, 503: renderProbeSchema } };
  app.get("/scrape", { schema: probe }, async (_req, reply) => {
    const connected = renderer.pool.connected;
    const body: RenderProbe = {
      status: connected ? "ok" : "unavailable",
      service: "capstan-scraper-render",
      browser: connected ? "connected" : "disconnected",
      pagesInUse: renderer.pool.pagesInUse,
      maxPages: config.workerConcurrency,
      queued: renderer.limiter.queued,
    };
    return reply.code(connected ? 200 : 503).send(body);
  });

  // The key is checked when the request arrives (onRequest), before its body is validated.
  const render = { body: renderRequestSchema, response: { 200: renderResponseSchema } };
  app.post("/scrape", { onRequest: requireKey, schema: render }, async (req, reply) => {
    const controller = new AbortController();
    // The caller gave up (its own task timeout): stop rendering for it.
    const onClose = () => {
      if (!reply.raw.writableEnded) controller.abort(new ScraperError("TIMEOUT", [0, "caller went away"]));
    };
    reply.raw.on("close", onClose);
    try {
      return await renderer.render(req.body, controller.signal);
    } finally {
      reply.raw.off("close", onClose);
    }
  });
}
