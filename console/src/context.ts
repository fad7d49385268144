// What every route of the console needs: its config, the session store, and the cluster every
// user's token is sent to; plus the session lookup and CSRF check each API route begins with.
import type { KubeConfig } from "@capstan/shared/kube";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ConsoleConfig } from "./config.ts";
import { errors } from "./errors.ts";
import { csrfMatches, type Session, type SessionStore } from "./sessions.ts";
import type { UserApi } from "./user-api.ts";

export const SESSION_COOKIE = "capstan_console_session";

export interface ConsoleContext {
  config: ConsoleConfig;
  sessions: SessionStore<UserApi>;
  /** The cluster and its CA; its user is never used: every call carries the signed-in user's token. */
  cluster: KubeConfig;
}

/** The signed-in user's session; changes (anything but GET) must also carry the session's CSRF token. */
export function sessionOf(ctx: ConsoleContext, req: FastifyRequest): Session<UserApi> {
  const session = ctx.sessions.get(req.cookies[SESSION_COOKIE]);
  if (!session) throw errors.notSignedIn();
  if (req.method !== "GET" && req.method !== "HEAD" && !csrfMatches(session, req.headers["x-csrf-token"])) {
    throw errors.csrf();
  }
  return session;
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
