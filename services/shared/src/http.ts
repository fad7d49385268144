// What every HTTP process serves besides its API: liveness, readiness and Prometheus metrics,
// plus request metrics. Services build their app with buildBaseApp() and add their routes, so
// tests drive the same app with inject() that production runs with listen().
//
// With `internal` set, those surfaces (and the service's own internal routes) answer only on a
// second, internal port (listenInternal): the public port answers 404 for them, so a NetworkPolicy
// can keep the internal port inside the cluster while the public one faces clients.
import { createServer, type IncomingMessage, type Server } from "node:http";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyServerOptions,
  LogController,
} from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import type { Logger } from "pino";
import { Counter, Histogram, LATENCY_BUCKETS, metricsPrefix, type Registry } from "./metrics.ts";

export interface BaseAppOptions {
  service: string;
  registry: Registry;
  logger?: Logger;
  /** Readiness: returns a reason when not ready. */
  notReady?: () => string | undefined;
  /** More fields of the /readyz body, ready or not (e.g. conditions of a degraded mode). */
  readyDetails?: () => Record<string, unknown>;
  bodyLimit?: number;
  trustProxy?: FastifyServerOptions["trustProxy"];
  /**
   * Serve /healthz, /readyz, /metrics and every path starting with one of `prefixes` on the
   * internal port only (listenInternal); the public port answers 404 for them.
   */
  internal?: { prefixes: string[] };
}

/** Marks a request that arrived on the internal port. */
const INTERNAL = Symbol("capstan.internalPort");
/** The internal servers of each app, closed with it (hooks cannot be added once it listens). */
const internalServers = new WeakMap<FastifyInstance, Set<Server>>();

/** Marks an internal path asked for on the public port: unknown there (404, never a 405). */
const HIDDEN = Symbol("capstan.hiddenOnPublicPort");

/** Whether the request named an internal path on the public port (its not-found handler answers 404). */
export function hiddenOnPublicPort(raw: IncomingMessage): boolean {
  return (raw as IncomingMessage & { [HIDDEN]?: boolean })[HIDDEN] === true;
}

/** Whether the request came in on the internal port (listenInternal). */
export function onInternalPort(raw: IncomingMessage): boolean {
  return (raw as IncomingMessage & { [INTERNAL]?: boolean })[INTERNAL] === true;
}

/**
 * Listens on the internal port with the same app: requests are tagged as internal and routed as
 * usual. Closed with the app.
 */
export async function listenInternal(app: FastifyInstance, opts: { port: number; host: string }): Promise<Server> {
  await app.ready();
  const server = createServer((req, res) => {
    (req as IncomingMessage & { [INTERNAL]?: boolean })[INTERNAL] = true;
    app.routing(req, res);
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const servers = internalServers.get(app);
  if (!servers) throw new Error("listenInternal needs an app made by buildBaseApp");
  servers.add(server);
  return server;
}

interface RouteMethod {
  method: string;
  pattern: RegExp;
}
const routeTables = new WeakMap<FastifyInstance, RouteMethod[]>();

/** A route path (`/v1/items/:id`, `/files/*`) as a regular expression over concrete paths. */
function routePattern(url: string): RegExp {
  const escaped = url
    .split("/")
    .map((part) => {
      if (part === "*") return ".*";
      if (part.startsWith(":")) return "[^/]+";
      return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  return new RegExp(`^${escaped}$`);
}

/**
 * The methods an app built by buildBaseApp answers on a path (for 405 with `Allow` when only the
 * method is wrong); empty when no route matches the path at all (a 404). `app` may be the app or
 * any plugin context inside it.
 */
export function allowedMethods(app: FastifyInstance, url: string): string[] {
  const path = url.split("?")[0] ?? url;
  const methods = new Set<string>();
  for (const r of routeTable(app)) if (r.pattern.test(path)) methods.add(r.method);
  return [...methods].sort();
}

/** The app's routes; a plugin's context (which Fastify derives from its parent's) finds its root's. */
function routeTable(app: FastifyInstance): RouteMethod[] {
  for (let ctx: object | null = app; ctx !== null; ctx = Object.getPrototypeOf(ctx)) {
    const table = routeTables.get(ctx as FastifyInstance);
    if (table) return table;
  }
  return [];
}

/**
 * The base app: route schemas are zod (fastify-type-provider-zod validates requests and serialises
 * responses with them; services' plugins call `withTypeProvider<ZodTypeProvider>()` for the types).
 */
export function buildBaseApp(opts: BaseAppOptions): FastifyInstance {
  // pino's Logger is a FastifyBaseLogger: typed as such, the app is a plain FastifyInstance.
  const loggerInstance: FastifyBaseLogger | undefined = opts.logger;
  const app = Fastify({
    loggerInstance,
    // Request lines come from the services' own hooks (with trace ids), not one per request here.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: opts.bodyLimit ?? 1024 * 1024,
    trustProxy: opts.trustProxy ?? false,
    return503OnClosing: true,
    requestIdHeader: "x-request-id",
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  const routes: RouteMethod[] = [];
  routeTables.set(app, routes);
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) routes.push({ method, pattern: routePattern(route.url) });
  });

  // RED metrics of every endpoint, named for the component (capstan_gateway_http_requests_total):
  // route is the route's pattern (bounded), "unmatched" for paths no route serves.
  const prefix = metricsPrefix(opts.service);
  const requests = new Counter({
    name: `${prefix}_http_requests_total`,
    help: "HTTP requests by method, route and status",
    labelNames: ["method", "route", "status"] as const,
    registers: [opts.registry],
  });
  const duration = new Histogram({
    name: `${prefix}_http_request_duration_seconds`,
    help: "HTTP request latency by method and route",
    labelNames: ["method", "route"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [opts.registry],
  });
  const servers = new Set<Server>();
  internalServers.set(app, servers);
  app.addHook("onClose", async () => {
    await Promise.all(
      [...servers].map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          }),
      ),
    );
  });
  const internal = opts.internal;
  if (internal) {
    const isInternal = (url: string) => {
      const path = url.split("?")[0] as string;
      return ["/healthz", "/readyz", "/metrics"].includes(path) || internal.prefixes.some((p) => path.startsWith(p));
    };
    // First hook of every request, before any body is read: internal paths on the public port
    // are unknown there.
    app.addHook("onRequest", (req, reply, done) => {
      if (isInternal(req.url) && !onInternalPort(req.raw)) {
        (req.raw as IncomingMessage & { [HIDDEN]?: boolean })[HIDDEN] = true;
        reply.callNotFound();
        return;
      }
      done();
    });
  }
  app.addHook("onResponse", async (req, reply) => {
    const route = req.routeOptions.url ?? "unmatched";
    requests.inc({ method: req.method, route, status: String(reply.statusCode) });
    duration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
  });

  app.get("/healthz", async () => ({ status: "ok", service: opts.service }));
  app.get("/readyz", async (_req, reply) => {
    const reason = opts.notReady?.();
    const details = opts.readyDetails?.() ?? {};
    if (reason) return reply.code(503).send({ status: "not ready", reason, ...details });
    return { status: "ready", ...details };
  });
  app.get("/metrics", async (_req, reply) => {
    reply.header("content-type", opts.registry.contentType);
    return opts.registry.metrics();
  });
  return app;
}
