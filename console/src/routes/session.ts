// Sign-in with a Kubernetes bearer token (a ServiceAccount token or an OIDC id token the API server
// accepts), checked by asking the API server who it belongs to; sign-out; the session's state.

import { KINDS as CAPSTAN_KINDS, GROUP } from "@capstan/shared/api";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import {
  type ConsoleContext,
  checkName,
  clearSessionCookie,
  SESSION_COOKIE,
  sessionOf,
  setSessionCookie,
} from "../context.ts";
import { allows } from "../user-api.ts";
import {
  nsParams,
  type Permissions,
  permissionsSchema,
  sessionInfoSchema,
  signedOutSchema,
  signInBody,
  VERBS,
} from "../wire.ts";

/** The kinds the pages act on, and what the user may do with each in a namespace. */
const KINDS = [
  ...(["AccessChannel", "SearchKey", "KnowledgeBase", "Agent", "Scraper"] as const).map(
    (k) => [GROUP, CAPSTAN_KINDS[k].plural] as const,
  ),
  ["", "secrets"],
  ["", "configmaps"],
] as const;

export function sessionRoutes(plain: FastifyInstance, ctx: ConsoleContext): void {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  // Attempts per client address (request.ip) per minute, counted before the body is read: a
  // guessing client is answered 429 with Retry-After, whatever its tokens.
  app.post(
    "/api/session",
    {
      config: { rateLimit: { max: ctx.config.signInPerMinute, timeWindow: 60_000 } },
      schema: { body: signInBody, response: { 200: sessionInfoSchema } },
    },
    async (req, reply) => {
      const { token } = req.body;
      const { user, api } = await ctx.signIn(token);
      const old = req.cookies[SESSION_COOKIE];
      if (old) await ctx.sessions.end(old);
      const session = await ctx.sessions.create(user, api, token);
      setSessionCookie(ctx, reply, session.id);
      req.log.info({ user: user.username }, "signed in");
      return { user, csrfToken: session.csrfToken, defaultNamespace: ctx.config.defaultNamespace };
    },
  );

  app.get("/api/session", { schema: { response: { 200: sessionInfoSchema } } }, async (req) => {
    const session = await sessionOf(ctx, req);
    return { user: session.user, csrfToken: session.csrfToken, defaultNamespace: ctx.config.defaultNamespace };
  });

  app.delete("/api/session", { schema: { response: { 200: signedOutSchema } } }, async (req, reply) => {
    const session = await sessionOf(ctx, req);
    await ctx.sessions.end(session.id);
    clearSessionCookie(ctx, reply);
    return { signedOut: true as const };
  });

  // What the user may do in a namespace: the pages hide or disable everything else.
  const permissions = { params: nsParams, response: { 200: permissionsSchema } };
  app.get("/api/namespaces/:ns/permissions", { schema: permissions }, async (req) => {
    const session = await sessionOf(ctx, req);
    const rules = await session.api.rules(checkName("namespace", req.params.ns));
    const out: Permissions = {};
    for (const [group, resource] of KINDS) {
      out[resource] = Object.fromEntries(
        VERBS.map((v) => [v, allows(rules, group, resource, v)]),
      ) as Permissions[string];
    }
    return out;
  });
}
