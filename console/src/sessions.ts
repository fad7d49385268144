// Signed-in users. The browser holds an opaque random value in an HTTP-only, SameSite=Strict
// cookie; the user's Kubernetes token stays on the server side, is used for every API call made on
// their behalf and is forgotten when the session ends (sign-out, idle timeout, maximum age, or the
// API server no longer accepting the token). Two stores keep sessions: this process's memory
// (MemorySessionStore: one replica, standalone mode) and Redis (redis-sessions.ts: any number of
// replicas, each session readable only with the secret half of its cookie).
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

/** The client a session acts through: closed when the session ends. */
export interface Closable {
  close(): Promise<void>;
}

export interface SessionLimits {
  /** A session ends this long after its last use (sliding). */
  idleMs: number;
  /** ... and this long after it began at the latest. */
  maxMs: number;
}

/** Where sessions live; `id` is the session's cookie value. */
export interface SessionStore<Api extends Closable> {
  /** A new session for a user whose `token` signed in and built `api`. */
  create(user: SessionUser, api: Api, token: string): Promise<Session<Api>>;
  /** The live session of this cookie (its idle clock restarted), or undefined. */
  get(id: string | undefined): Promise<Session<Api> | undefined>;
  end(id: string): Promise<void>;
  close(): Promise<void>;
}

/** How long a session used at `now` lives on: its idle time, cut at its maximum age (≤ 0: ended). */
export function remainingMs(limits: SessionLimits, createdAt: number, now: number): number {
  return Math.min(limits.idleMs, createdAt + limits.maxMs - now);
}

/** Sessions in this process's memory: lost on restart, and seen by this replica only. */
export class MemorySessionStore<Api extends Closable> implements SessionStore<Api> {
  private readonly sessions = new Map<string, Session<Api>>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly limits: SessionLimits;
  private readonly now: () => number;

  constructor(limits: SessionLimits, now: () => number = Date.now) {
    this.limits = limits;
    this.now = now;
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
  }

  async create(user: SessionUser, api: Api): Promise<Session<Api>> {
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

  async get(id: string | undefined): Promise<Session<Api> | undefined> {
    return this.touch(id);
  }

  async end(id: string): Promise<void> {
    this.drop(id);
  }

  get size(): number {
    return this.sessions.size;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    for (const id of [...this.sessions.keys()]) this.drop(id);
  }

  private touch(id: string | undefined): Session<Api> | undefined {
    if (!id) return undefined;
    const s = this.sessions.get(id);
    if (!s) return undefined;
    const t = this.now();
    if (t - s.lastUsedAt > this.limits.idleMs || t - s.createdAt > this.limits.maxMs) {
      this.drop(id);
      return undefined;
    }
    s.lastUsedAt = t;
    return s;
  }

  private drop(id: string): void {
    const s = this.sessions.get(id);
    if (!s) return;
    this.sessions.delete(id);
    void s.api.close();
  }

  private sweep(): void {
    for (const id of [...this.sessions.keys()]) this.touch(id);
  }
}

/** Constant-time comparison of the CSRF token a request carries with its session's. */
export function csrfMatches(session: { csrfToken: string }, sent: string | string[] | undefined): boolean {
  if (typeof sent !== "string") return false;
  const a = Buffer.from(session.csrfToken);
  const b = Buffer.from(sent);
  return a.length === b.length && timingSafeEqual(a, b);
}
