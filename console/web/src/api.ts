// The page's one way to the console's API: same-origin fetch with the session cookie (HTTP-only,
// never visible here) and, on every change, the session's CSRF token in a header. Errors come back
// as ApiError carrying the words the API server or the console gave. Every answer is parsed with
// its route's own schema from the console's wire module (console/src/wire.ts), the one the route
// serialises it with, and the page takes its types from there too: no shape is declared twice.
import { ExponentialBackoff, handleWhen, retry } from "cockatiel";
import type { z } from "zod";

export type {
  ChannelRow as Channel,
  KnowledgeRow,
  Permissions,
  Ready,
  ResourceRow,
  RevealedKey,
  SearchKeyRow,
  SessionInfo,
  Usage,
} from "../../src/wire.ts";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let csrfToken = "";
let onSignedOut: () => void = () => {};

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

/** Called when the session has ended (expired, signed out elsewhere, token revoked). */
export function whenSignedOut(fn: () => void): void {
  onSignedOut = fn;
}

/** `method` on `path` with a JSON body (if any); the answer as `answer` (its route's schema) parses it. */
export async function call<S extends z.ZodType>(
  method: string,
  path: string,
  answer: S,
  body?: unknown,
): Promise<z.output<S>> {
  return send(
    method,
    path,
    answer,
    body === undefined ? undefined : { data: JSON.stringify(body), type: "application/json" },
  );
}

/** POSTs a file as its own bytes (not JSON), with its content type. */
export const upload = <S extends z.ZodType>(path: string, file: Blob, contentType: string, answer: S) =>
  send("POST", path, answer, { data: file, type: contentType });

async function send<S extends z.ZodType>(
  method: string,
  path: string,
  answer: S,
  body?: { data: BodyInit; type: string },
): Promise<z.output<S>> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = body.type;
  if (method !== "GET") headers["x-csrf-token"] = csrfToken;
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      ...(body !== undefined ? { body: body.data } : {}),
    });
  } catch (err) {
    throw new ApiError(0, "Network", `the console could not be reached: ${(err as Error).message}`);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    json = { error: { code: `HTTP${res.status}`, message: text.slice(0, 300) } };
  }
  if (!res.ok) {
    const e = (json as { error?: { code?: string; message?: string } }).error ?? {};
    if (res.status === 401 && path !== "/api/session") onSignedOut();
    throw new ApiError(res.status, e.code ?? `HTTP${res.status}`, e.message ?? `HTTP ${res.status}`);
  }
  return parseAnswer(answer, json, res.status, path);
}

/** An answer as its route's schema reads it; one that does not fit is an error in words. */
function parseAnswer<S extends z.ZodType>(answer: S, json: unknown, status: number, path: string): z.output<S> {
  const parsed = answer.safeParse(json);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue?.path.join(".") || "the answer";
  throw new ApiError(
    status,
    "BadAnswer",
    `the console's answer to ${path} is not what this page expects (${where}: ${issue?.message})`,
  );
}

/**
 * A read that meets the console between pods (a rollout, a replica stopping behind the ingress:
 * no answer, 502, 503 or 504) is sent again, up to 3 more times over about 2 s with jittered waits;
 * other errors are the answer. Changes are never resent: the user sees the error and decides.
 */
const transient = (e: unknown) => e instanceof ApiError && [0, 502, 503, 504].includes(e.status);
const reads = retry(handleWhen(transient), {
  maxAttempts: 3,
  backoff: new ExponentialBackoff({ initialDelay: 250, maxDelay: 1_000 }),
});

export const get = <S extends z.ZodType>(path: string, answer: S) => reads.execute(() => call("GET", path, answer));

/**
 * A read made by an effect: `onAnswer`/`onError` run only while the effect is current. Return
 * what this returns from the effect: its cleanup (a change of namespace or page) drops a late
 * answer for the old one instead of showing it as the new one's (a retried read can land late).
 */
export function getWhileCurrent<S extends z.ZodType>(
  path: string,
  answer: S,
  onAnswer: (value: z.output<S>) => void,
  onError: (err: ApiError) => void,
): () => void {
  let current = true;
  get(path, answer).then(
    (value) => current && onAnswer(value),
    (err: ApiError) => current && onError(err),
  );
  return () => {
    current = false;
  };
}

export const post = <S extends z.ZodType>(path: string, answer: S, body: unknown = {}) =>
  call("POST", path, answer, body);
export const patch = <S extends z.ZodType>(path: string, answer: S, body: unknown) => call("PATCH", path, answer, body);
export const del = <S extends z.ZodType>(path: string, answer: S) => call("DELETE", path, answer);

export const nsPath = (ns: string, rest: string) => `/api/namespaces/${encodeURIComponent(ns)}/${rest}`;
