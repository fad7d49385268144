// The page's one way to the console's API: same-origin fetch with the session cookie (HTTP-only,
// never visible here) and, on every change, the session's CSRF token in a header. Errors come back
// as ApiError carrying the words the API server or the console gave.
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

export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  return send<T>(
    method,
    path,
    body === undefined ? undefined : { data: JSON.stringify(body), type: "application/json" },
  );
}

/** POSTs a file as its own bytes (not JSON), with its content type. */
export const upload = <T>(path: string, file: Blob, contentType: string) =>
  send<T>("POST", path, { data: file, type: contentType });

async function send<T>(method: string, path: string, body?: { data: BodyInit; type: string }): Promise<T> {
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
  return json as T;
}

export const get = <T>(path: string) => call<T>("GET", path);
export const post = <T>(path: string, body: unknown = {}) => call<T>("POST", path, body);
export const patch = <T>(path: string, body: unknown) => call<T>("PATCH", path, body);
export const del = <T>(path: string) => call<T>("DELETE", path);

export const nsPath = (ns: string, rest: string) => `/api/namespaces/${encodeURIComponent(ns)}/${rest}`;

export interface Ready {
  status: string;
  reason: string;
  message: string;
}

export interface Channel {
  name: string;
  channelName: string;
  agent: string;
  qpm: number;
  expiresAt: string | null;
  keepHistory: boolean;
  keyPrefix: string | null;
  endpoint: string | null;
  keySupplied: boolean;
  keyRevealed: boolean;
  ready: Ready;
}

export interface RevealedKey {
  key: string;
  keyPrefix: string;
  endpoint: string | null;
}

export type Permissions = Record<string, Record<"get" | "list" | "create" | "patch" | "delete", boolean>>;

export interface SessionInfo {
  user: { username: string; groups: string[] };
  csrfToken: string;
  defaultNamespace: string;
}
