// Everything under /api/v1 as one encapsulated plugin: the request id and server span for every
// request of the prefix, the channel key for every route (auth), and the channel's QPM limiter for
// chat completions only. The hooks are added to this plugin's own contexts, so they run for these
// routes and no others (health, metrics and the API reference page stay outside). Its dependencies
// come in as plugin options, built by app.ts.
import type { FastifyPluginAsync } from "fastify";
import { gatewayNotFound } from "../http/error-handler.ts";
import { type AuthOptions, authenticate, installTracing, limitRate } from "../http/request-context.ts";
import type { QpmLimiter } from "../limiter/limiter.ts";
import { type ChatRouteOptions, chatRoutes } from "./chat.ts";
import { type MetaRouteOptions, metaRoutes } from "./meta.ts";

export type ApiV1Options = AuthOptions & ChatRouteOptions & MetaRouteOptions & { limiter: QpmLimiter };

export const apiV1: FastifyPluginAsync<ApiV1Options> = async (app, options) => {
  // Fastify hands a plugin its registration options, `prefix` included: not passed further down.
  const { prefix: _prefix, ...opts } = options as ApiV1Options & { prefix?: string };
  installTracing(app);
  // Paths under /api/v1 that no route serves are answered in this context, so they carry the
  // request id too (the root's handler would run without this plugin's hooks).
  app.setNotFoundHandler(gatewayNotFound(app));
  await app.register(async (authenticated) => {
    authenticated.addHook("onRequest", authenticate(opts));
    await authenticated.register(metaRoutes, opts);
    await authenticated.register(async (limited) => {
      limited.addHook("onRequest", limitRate(opts));
      await limited.register(chatRoutes, opts);
    });
  });
};
