// Signed-in users, kept in this process's memory only: the browser holds an opaque random session
// id in an HTTP-only, SameSite=Strict cookie; the user's Kubernetes token stays here, is used for
// every API call made on their behalf and is forgotten when the session ends (sign-out, idle
// timeout, maximum age, or the API server no longer accepting the token).
import { randomBytes, timingSafeEqual } from "node:crypto";

export interface SessionUser {
  username: string;
  groups: string[];
}

export interface Session<Api> {
  id: string;
  /** Sent back by the page in the x-csrf-token header of every change (never in the cookie). */
  csrfToken: string;
  user: SessionUser;
  api: Api;
  createdAt: number;
  lastUsedAt: number;
}

export class SessionStore<Api extends { close(): Promise<void> }> {
  private readonly sessions = new Map<string, Session<Api>>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly limits: { idleMs: number; maxMs: number };
  private readonly now: () => number;

  constructor(limits: { idleMs: number; maxMs: number }, now: () => number = Date.now) {
    this.limits = limits;
    this.now = now;
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
  }

  create(user: SessionUser, api: Api): Session<Api> {
    const t = this.now();
    const session: Session<Api> = {
      id: randomBytes(32).toString("base64url"),
      csrfToken: randomBytes(32).toString("base64url"),
      user,
      api,
      createdAt: t,
      lastUsedAt: t,
    };
    this.sessions.set(session.id, session);
    return session;
  }

  /** The live session of this id (its idle clock restarted), or undefined. */
  get(id: string | undefined): Session<Api> | undefined {
    if (!id) return undefined;
    const s = this.sessions.get(id);
    if (!s) return undefined;
    const t = this.now();
    if (t - s.lastUsedAt > this.limits.idleMs || t - s.createdAt > this.limits.maxMs) {
      this.end(id);
      return undefined;
    }
    s.lastUsedAt = t;
    return s;
  }

  end(id: string): void {
    const s = this.sessions.get(id);
    if (!s) return;
    this.sessions.delete(id);
    void s.api.close();
  }

  get size(): number {
    return this.sessions.size;
  }

  private sweep(): void {
    for (const id of [...this.sessions.keys()]) this.get(id);
  }

  close(): void {
    clearInterval(this.sweeper);
    for (const id of [...this.sessions.keys()]) this.end(id);
  }
}

/** Constant-time comparison of the CSRF token a request carries with its session's. */
export function csrfMatches(session: { csrfToken: string }, sent: string | string[] | undefined): boolean {
  if (typeof sent !== "string") return false;
  const a = Buffer.from(session.csrfToken);
  const b = Buffer.from(sent);
  return a.length === b.length && timingSafeEqual(a, b);
}
