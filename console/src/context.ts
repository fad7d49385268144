// What every route of the console needs: its config, the session store, and how a token signs in
// (against the cluster, or standalone mode's local admin token); plus the session lookup and CSRF check each API route begins with.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ConsoleConfig } from "./config.ts";
import { errors } from "./errors.ts";
import { csrfMatches, type Session, type SessionStore, type SessionUser } from "./sessions.ts";
import type { ConsoleApi } from "./user-api.ts";

export const SESSION_COOKIE = "capstan_console_session";

export interface ConsoleContext {
  config: ConsoleConfig;
  sessions: SessionStore<ConsoleApi>;
  /** Who a token belongs to and the API acting with its authority (sign-in.ts); throws when refused. */
  signIn: (token: string) => Promise<{ user: SessionUser; api: ConsoleApi }>;
}

/** Each request's session, once looked up (the hook below, then the route's own sessionOf). */
const known = new WeakMap<FastifyRequest, Session<ConsoleApi>>();

/** The signed-in user's session; changes (anything but GET) must also carry the session's CSRF token. */
export async function sessionOf(ctx: ConsoleContext, req: FastifyRequest): Promise<Session<ConsoleApi>> {
  const seen = known.get(req);
  if (seen) return seen;
  const session = await ctx.sessions.get(req.cookies[SESSION_COOKIE]);
  if (!session) throw errors.notSignedIn();
  if (req.method !== "GET" && req.method !== "HEAD" && !csrfMatches(session, req.headers["x-csrf-token"])) {
    throw errors.csrf();
  }
  known.set(req, session);
  return session;
}

/**
 * Checks the session (and CSRF token) of every API route but sign-in before its request is
 * validated against its wire schema, so a caller who is not signed in learns nothing about a
 * body but "sign in first" (401), as before the routes had schemas.
 */
export function checkSessionFirst(app: FastifyInstance, ctx: ConsoleContext): void {
  app.addHook("preValidation", async (req) => {
    const url = req.routeOptions.url ?? "";
    if (!url.startsWith("/api/") || (url === "/api/session" && req.method === "POST")) return;
    await sessionOf(ctx, req);
  });
}

export function setSessionCookie(ctx: ConsoleContext, reply: FastifyReply, id: string): void {
  reply.setCookie(SESSION_COOKIE, id, {
    httpOnly: true,
    sameSite: "strict",
    secure: ctx.config.secureCookies,
    path: "/",
    maxAge: ctx.config.maxSessionSeconds,
  });
}

export function clearSessionCookie(ctx: ConsoleContext, reply: FastifyReply): void {
  reply.clearCookie(SESSION_COOKIE, {
    httpOnly: true,
    sameSite: "strict",
    secure: ctx.config.secureCookies,
    path: "/",
  });
}

/** A namespace or object name as Kubernetes accepts it (DNS-1123 label / subdomain). */
export const NAME_PATTERN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

export function checkName(what: string, value: string): string {
  if (!NAME_PATTERN.test(value)) {
    throw errors.invalid(`${what} "${value}" is not a valid Kubernetes name (lower-case letters, digits, '-', '.')`);
  }
  return value;
}
