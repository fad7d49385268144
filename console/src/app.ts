// The console's HTTP app: the built frontend (static files, no CDN) and a small API for it (the
// BFF) under /api, every call of which acts on the API server with the signed-in user's token.
// Safe by default: a strict Content-Security-Policy and the other helmet headers, an HTTP-only
// SameSite=Strict session cookie, a CSRF token on every change, no key in a URL or a log line,
// sign-in attempts limited per client address, and bodies of at most 64 KiB on every route but the
// document upload (which checks the session before reading its body). Metrics and health are on
// the internal port (internalApp, listened in main.ts), never on the port users reach.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  buildBaseApp,
  collectRoutes,
  type Logger,
  metricsPrefix,
  outboundMetrics,
  type Registry,
} from "@capstan/shared";
import type { KubeConfig } from "@capstan/shared/kube";
import fastifyCookie from "@fastify/cookie";
import fastifyHelmet from "@fastify/helmet";
import fastifyRateLimit from "@fastify/rate-limit";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance } from "fastify";
import { type ConsoleConfig, standaloneOf } from "./config.ts";
import { type ConsoleContext, checkSessionFirst } from "./context.ts";
import { errors } from "./errors.ts";
import { installConsoleErrors } from "./http-errors.ts";
import { agentRoutes } from "./routes/agents.ts";
import { channelRoutes } from "./routes/channels.ts";
import { documentRoutes } from "./routes/documents.ts";
import { knowledgeRoutes } from "./routes/knowledge.ts";
import { searchKeyRoutes } from "./routes/search-keys.ts";
import { sessionRoutes } from "./routes/session.ts";
import { tryRoutes } from "./routes/try.ts";
import { usageRoutes } from "./routes/usage.ts";
import { sessionStore } from "./session-store.ts";
import { clusterSignIn, localSignIn } from "./sign-in.ts";
import { usageSources } from "./usage-source.ts";

export interface ConsoleDeps {
  /**
   * The cluster the users' tokens are sent to (server and CA; its own user is not used). Not
   * needed in standalone mode (config.standalone…), where the YAML folder is the API.
   */
  cluster?: KubeConfig;
  logger: Logger;
  registry: Registry;
}

/** The largest body any route but the document upload reads. */
export const MAX_JSON_BYTES = 64 * 1024;

export const DEFAULT_ASSETS_DIR = fileURLToPath(new URL("../dist/", import.meta.url));

export async function buildApp(config: ConsoleConfig, deps: ConsoleDeps): Promise<FastifyInstance> {
  const app = buildBaseApp({
    service: "console",
    registry: deps.registry,
    logger: deps.logger,
    // Every JSON body the page sends is small (a token is at most 16 KiB): nothing larger is read
    // before the session is known. The upload route has its own limit, after its session check.
    bodyLimit: MAX_JSON_BYTES,
    // request.ip, which the sign-in limit counts by: the peer, or X-Forwarded-For past these.
    trustProxy: config.trustedProxies.length > 0 ? config.trustedProxies : false,
    internal: true,
  });
  collectRoutes(app); // for the /api routes' OpenAPI document (docs/openapi/internal/console.json)
  const local = standaloneOf(config);
  if (!local && !deps.cluster) throw new Error("the console needs a cluster (KUBECONFIG) or standalone mode");
  const signIn = local ? localSignIn(local, local.adminTokenFile) : clusterSignIn(deps.cluster as KubeConfig);
  const sessions = sessionStore(config, deps, app);
  const ctx: ConsoleContext = { config, sessions, signIn };

  await app.register(fastifyCookie);
  // Only the routes that ask for it (sign-in) are limited; counters are per process, like sessions.
  await app.register(fastifyRateLimit, {
    global: false,
    errorResponseBuilder: (_req, context) =>
      errors.tooManySignIns(context.max, Math.max(1, Math.ceil(context.ttl / 1000))),
  });
  await app.register(fastifyHelmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", "data:"],
        fontSrc: ["'self'"],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
    },
    referrerPolicy: { policy: "no-referrer" },
  });

  installConsoleErrors(app);
  checkSessionFirst(app, ctx);
  // Schema first, no exceptions: a route under /api without its answers in wire.ts fails the start.
  app.addHook("onRoute", (route) => {
    if (route.url.startsWith("/api/") && !route.schema?.response) {
      throw new Error(`console route ${String(route.method)} ${route.url} declares no wire schema (wire.ts)`);
    }
  });

  sessionRoutes(app, ctx);
  channelRoutes(app, ctx);
  agentRoutes(app, ctx);
  searchKeyRoutes(app, ctx);
  knowledgeRoutes(app, ctx);
  documentRoutes(app, ctx);
  // capstan_console_outbound_*: the gateway and scraper calls of "try", the usage page's reads.
  const outbound = outboundMetrics(deps.registry, metricsPrefix("console"));
  tryRoutes(app, ctx, outbound);
  const { usage, hourly } = usageSources(config, { cluster: deps.cluster, registry: deps.registry, metrics: outbound });
  if (usage) app.addHook("onClose", async () => usage.close());
  usageRoutes(app, ctx, usage, hourly);

  const assets = config.assetsDir ?? DEFAULT_ASSETS_DIR;
  if (existsSync(assets)) {
    await app.register(fastifyStatic, { root: assets, index: ["index.html"], wildcard: false });
  } else {
    deps.logger.warn({ assets }, "the console's frontend is not built: run `npm run build -w @capstan/console`");
    app.get("/", async (_req, reply) =>
      reply
        .code(503)
        .type("text/plain")
        .send("The console's frontend is not built: run `npm run build -w @capstan/console`."),
    );
  }
  return app;
}
