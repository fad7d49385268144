// What every HTTP process serves besides its API: liveness, readiness and Prometheus metrics,
// plus request metrics. Services build their app with buildBaseApp() and add their routes, so
// tests drive the same app with inject() that production runs with listen().
//
// With `internal` set, those surfaces live on a second Fastify instance (internalApp(app)),
// listened on its own port by listenInternal, and services register their internal routes there.
// The public instance has no such routes at all: which port a path reaches is decided by which
// router holds it, so no spelling of a path (percent-encoded, dot segments, double slashes, case)
// can reach an internal route from the public port, and a NetworkPolicy can keep the internal
// port inside the cluster while the public one faces clients.
import type { Server } from "node:http";
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
   * Serve /healthz, /readyz and /metrics on a second Fastify instance, internalApp(app), which
   * listenInternal() listens on the internal port; the public app does not have those routes.
   * Without it (processes whose every port is internal: the operator, the rendering service) the
   * app itself serves them.
   */
  internal?: boolean;
}

/** The internal instance of each public app built with `internal` (closed with it). */
const internalApps = new WeakMap<FastifyInstance, FastifyInstance>();

/**
 * The internal instance of an app built by buildBaseApp with `internal`: metrics, health and the
 * service's internal routes, which services register here and nowhere else.
 */
export function internalApp(app: FastifyInstance): FastifyInstance {
  const internal = internalApps.get(app);
  if (!internal) throw new Error("internalApp needs an app made by buildBaseApp with `internal`");
  return internal;
}

/** Listens the app's internal instance on the internal port; it closes with the app. */
export async function listenInternal(app: FastifyInstance, opts: { port: number; host: string }): Promise<Server> {
  const internal = internalApp(app);
  await internal.listen({ port: opts.port, host: opts.host });
  return internal.server;
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
 * any plugin context inside it; the public and internal instances each know their own routes.
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

/** A Fastify instance with zod schemas and its route table (for allowedMethods). */
function instance(opts: BaseAppOptions, trustProxy: FastifyServerOptions["trustProxy"]): FastifyInstance {
  // pino's Logger is a FastifyBaseLogger: typed as such, the app is a plain FastifyInstance.
  const loggerInstance: FastifyBaseLogger | undefined = opts.logger;
  const app = Fastify({
    loggerInstance,
    // Request lines come from the services' own hooks (with trace ids), not one per request here.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: opts.bodyLimit ?? 1024 * 1024,
    trustProxy,
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
  return app;
}

/**
 * The base app: route schemas are zod (fastify-type-provider-zod validates requests and serialises
 * responses with them; services' plugins call `withTypeProvider<ZodTypeProvider>()` for the types).
 */
export function buildBaseApp(opts: BaseAppOptions): FastifyInstance {
  const app = instance(opts, opts.trustProxy ?? false);
  // Nothing on the internal port reads a client address: no forwarded header is trusted there.
  const internal = opts.internal ? instance(opts, false) : undefined;

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
  for (const a of internal ? [app, internal] : [app]) {
    a.addHook("onResponse", async (req, reply) => {
      const route = req.routeOptions.url ?? "unmatched";
      requests.inc({ method: req.method, route, status: String(reply.statusCode) });
      duration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
    });
  }

  const surfaces = internal ?? app;
  surfaces.get("/healthz", async () => ({ status: "ok", service: opts.service }));
  surfaces.get("/readyz", async (_req, reply) => {
    const reason = opts.notReady?.();
    const details = opts.readyDetails?.() ?? {};
    if (reason) return reply.code(503).send({ status: "not ready", reason, ...details });
    return { status: "ready", ...details };
  });
  surfaces.get("/metrics", async (_req, reply) => {
    reply.header("content-type", opts.registry.contentType);
    return opts.registry.metrics();
  });
  if (internal) {
    internalApps.set(app, internal);
    // Closed with the app (after its own server: Fastify runs onClose hooks once it has stopped
    // listening), so readiness answers until the public port has drained.
    app.addHook("onClose", async () => {
      await internal.close();
    });
  }
  return app;
}
