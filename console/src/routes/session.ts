// Sign-in with a Kubernetes bearer token (a ServiceAccount token or an OIDC id token the API server
// accepts), checked by asking the API server who it belongs to; sign-out; the session's state.
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import {
  type ConsoleContext,
  checkName,
  clearSessionCookie,
  SESSION_COOKIE,
  sessionOf,
  setSessionCookie,
} from "../context.ts";
import { errors } from "../errors.ts";
import { allows } from "../user-api.ts";

const signIn = z.object({ token: z.string().trim().min(1, "paste a token").max(16_384) });

/** The kinds the pages act on, and what the user may do with each in a namespace. */
const KINDS = [
  ["capstan.dev", "accesschannels"],
  ["capstan.dev", "searchkeys"],
  ["capstan.dev", "knowledgebases"],
  ["capstan.dev", "agents"],
  ["capstan.dev", "scrapers"],
  ["", "secrets"],
  ["", "configmaps"],
] as const;
const VERBS = ["get", "list", "create", "patch", "delete"] as const;

export function sessionRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  // Attempts per client address (request.ip) per minute, counted before the body is read: a
  // guessing client is answered 429 with Retry-After, whatever its tokens.
  app.post(
    "/api/session",
    { config: { rateLimit: { max: ctx.config.signInPerMinute, timeWindow: 60_000 } } },
    async (req, reply) => {
      const parsed = signIn.safeParse(req.body);
      if (!parsed.success) throw errors.invalid(parsed.error.issues.map((i) => i.message).join("; "));
      const { user, api } = await ctx.signIn(parsed.data.token);
      const old = req.cookies[SESSION_COOKIE];
      if (old) await ctx.sessions.end(old);
      const session = await ctx.sessions.create(user, api, parsed.data.token);
      setSessionCookie(ctx, reply, session.id);
      req.log.info({ user: user.username }, "signed in");
      return { user, csrfToken: session.csrfToken, defaultNamespace: ctx.config.defaultNamespace };
    },
  );

  app.get("/api/session", async (req) => {
    const session = await sessionOf(ctx, req);
    return { user: session.user, csrfToken: session.csrfToken, defaultNamespace: ctx.config.defaultNamespace };
  });

  app.delete("/api/session", async (req, reply) => {
    const session = await sessionOf(ctx, req);
    await ctx.sessions.end(session.id);
    clearSessionCookie(ctx, reply);
    return { signedOut: true };
  });

  // What the user may do in a namespace: the pages hide or disable everything else.
  app.get<{ Params: { ns: string } }>("/api/namespaces/:ns/permissions", async (req) => {
    const session = await sessionOf(ctx, req);
    const rules = await session.api.rules(checkName("namespace", req.params.ns));
    const out: Record<string, Record<string, boolean>> = {};
    for (const [group, resource] of KINDS) {
      out[resource] = Object.fromEntries(VERBS.map((v) => [v, allows(rules, group, resource, v)]));
    }
    return out;
  });
}
