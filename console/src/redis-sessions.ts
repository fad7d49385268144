// Sessions in Redis, so the console runs as several replicas behind one Service and a restart signs
// nobody out. The cookie is `<id>.<secret>`, two random values: Redis keeps, under the id, the
// session (the user, the CSRF token, the user's Kubernetes token, when it began) sealed with
// AES-256-GCM under the secret, which only the browser holds. Someone who reads Redis (a backup, a
// shared instance) finds neither tokens nor anything that opens them, and a forged cookie with a
// real id but another secret opens nothing. This is how oauth2-proxy keeps its Redis sessions.
//
// The key expires after the idle timeout, and each use pushes the expiry on (never past the
// session's maximum age). Each replica builds the user's API client from the token the first time
// it serves the session, and keeps it until the session ends or goes unused for the idle timeout.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { type RedisClient, subjectKey } from "@capstan/shared/redis";
import { ConsoleError } from "./errors.ts";
import {
  type Closable,
  remainingMs,
  type Session,
  type SessionLimits,
  type SessionStore,
  type SessionUser,
} from "./sessions.ts";

const KEY_PREFIX = "capstan:console:session:";
const ID_BYTES = 18;
const SECRET_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** `<id>.<secret>`, both base64url: 24 and 43 characters. */
const COOKIE = /^([A-Za-z0-9_-]{24})\.([A-Za-z0-9_-]{43})$/;

/** What Redis holds of a session, sealed. */
interface Sealed {
  user: SessionUser;
  csrfToken: string;
  token: string;
  createdAt: number;
}

function seal(secret: Buffer, id: string, record: Sealed): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", secret, iv);
  // The id is authenticated with the data: a sealed value copied under another id opens nothing.
  cipher.setAAD(Buffer.from(id));
  const body = Buffer.concat([cipher.update(JSON.stringify(record), "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

function open(secret: Buffer, id: string, sealed: Buffer): Sealed | undefined {
  if (sealed.length <= IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv("aes-256-gcm", secret, sealed.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(id));
    decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const plain = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    return JSON.parse(plain.toString("utf8")) as Sealed;
  } catch {
    return undefined; // another secret: the authentication tag does not match
  }
}

const unavailable = (err: unknown) =>
  new ConsoleError(
    503,
    "SessionStoreUnavailable",
    `sessions are kept in Redis, which did not answer (${(err as Error).message}): try again shortly`,
  );

export class RedisSessionStore<Api extends Closable> implements SessionStore<Api> {
  /** The API clients this replica built, by session id, and when each was last used here. */
  private readonly clients = new Map<string, { api: Api; usedAt: number }>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly redis: RedisClient;
  private readonly limits: SessionLimits;
  /** The user's API client from their token, for a session another replica began. */
  private readonly apiFor: (token: string) => Api;
  private readonly now: () => number;

  constructor(redis: RedisClient, limits: SessionLimits, apiFor: (token: string) => Api, now = Date.now) {
    this.redis = redis;
    this.limits = limits;
    this.apiFor = apiFor;
    this.now = now;
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
  }

  async create(user: SessionUser, api: Api, token: string): Promise<Session<Api>> {
    const id = randomBytes(ID_BYTES).toString("base64url");
    const secret = randomBytes(SECRET_BYTES);
    const createdAt = this.now();
    const record: Sealed = { user, csrfToken: randomBytes(32).toString("base64url"), token, createdAt };
    try {
      await this.redis.set(subjectKey(KEY_PREFIX, id), seal(secret, id, record), "PX", this.limits.idleMs);
    } catch (err) {
      await api.close();
      throw unavailable(err);
    }
    this.clients.set(id, { api, usedAt: createdAt });
    return this.session(`${id}.${secret.toString("base64url")}`, record, api, createdAt);
  }

  async get(cookie: string | undefined): Promise<Session<Api> | undefined> {
    const found = await this.read(cookie);
    if (!found) return undefined;
    const { id, record } = found;
    const t = this.now();
    const left = remainingMs(this.limits, record.createdAt, t);
    try {
      if (left <= 0) {
        await this.redis.del(subjectKey(KEY_PREFIX, id));
      } else {
        await this.redis.pexpire(subjectKey(KEY_PREFIX, id), left);
      }
    } catch (err) {
      throw unavailable(err);
    }
    if (left <= 0) {
      this.forget(id);
      return undefined;
    }
    const client = this.clients.get(id) ?? { api: this.apiFor(record.token), usedAt: t };
    client.usedAt = t;
    this.clients.set(id, client);
    return this.session(cookie as string, record, client.api, t);
  }

  async end(cookie: string): Promise<void> {
    // Only the cookie's holder ends a session: an id with the wrong secret removes nothing.
    const found = await this.read(cookie);
    if (!found) return;
    try {
      await this.redis.del(subjectKey(KEY_PREFIX, found.id));
    } catch (err) {
      throw unavailable(err);
    }
    this.forget(found.id);
  }

  /** Closes this replica's clients; the sessions stay in Redis for the other replicas. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    for (const id of [...this.clients.keys()]) this.forget(id);
  }

  /** The cookie's session record, opened; undefined for a malformed cookie, an unknown id or a wrong secret. */
  private async read(cookie: string | undefined): Promise<{ id: string; record: Sealed } | undefined> {
    const m = COOKIE.exec(cookie ?? "");
    if (!m) return undefined;
    const [, id, secret] = m as unknown as [string, string, string];
    let sealed: Buffer | null;
    try {
      sealed = await this.redis.getBuffer(subjectKey(KEY_PREFIX, id));
    } catch (err) {
      throw unavailable(err);
    }
    if (!sealed) {
      this.forget(id);
      return undefined;
    }
    const record = open(Buffer.from(secret, "base64url"), id, sealed);
    return record ? { id, record } : undefined;
  }

  private session(cookie: string, record: Sealed, api: Api, lastUsedAt: number): Session<Api> {
    const { user, csrfToken, createdAt } = record;
    return { id: cookie, csrfToken, user, api, createdAt, lastUsedAt };
  }

  private forget(id: string): void {
    const client = this.clients.get(id);
    if (!client) return;
    this.clients.delete(id);
    void client.api.close();
  }

  /** Clients of sessions this replica has not served for the idle timeout (ended, or served elsewhere). */
  private sweep(): void {
    const t = this.now();
    for (const [id, c] of this.clients) if (t - c.usedAt > this.limits.idleMs) this.forget(id);
  }
}
