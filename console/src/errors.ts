// The console's one error registry: every refusal the BFF gives the page, in words, with the HTTP
// status the page shows it under. API server refusals keep the API server's own message (RBAC's
// "cannot create resource …", validation's field errors), which is what the user must read.
import { KubeApiError } from "@capstan/shared/kube";

export class ConsoleError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "ConsoleError";
    this.status = status;
    this.code = code;
  }
}

export const errors = {
  notSignedIn: () => new ConsoleError(401, "NotSignedIn", "sign in with a Kubernetes token first"),
  tokenRejected: (why: string) =>
    new ConsoleError(401, "TokenRejected", `the API server did not accept this token: ${why}`),
  csrf: () =>
    new ConsoleError(
      403,
      "CsrfTokenMissing",
      "this request lacks the page's CSRF token: reload the page and try again",
    ),
  invalid: (message: string) => new ConsoleError(422, "Invalid", message),
  tooLarge: (limitBytes: number) =>
    new ConsoleError(
      413,
      "TooLarge",
      `the request is larger than ${limitBytes >= 1024 * 1024 ? `${limitBytes / (1024 * 1024)} MiB` : `${Math.floor(limitBytes / 1024)} KiB`}, the most the console takes`,
    ),
  documentType: (types: string[]) =>
    new ConsoleError(415, "UnsupportedMediaType", `send the file itself as the body, with one of: ${types.join(", ")}`),
  suppliedKey: (secret: string) =>
    new ConsoleError(
      409,
      "KeySupplied",
      `this resource uses a key you supply in Secret ${secret}: the console neither shows nor rotates it`,
    ),
  keyNotIssued: (seconds: number) =>
    new ConsoleError(
      504,
      "KeyNotIssued",
      `the operator has not issued the key within ${seconds} s: is the Capstan operator running and watching this namespace?`,
    ),
  tooManySignIns: (perMinute: number, retryAfterSeconds: number) =>
    new ConsoleError(
      429,
      "TooManySignIns",
      `more than ${perMinute} sign-in attempts a minute from this address: try again in ${retryAfterSeconds} s`,
    ),
  upstream: (what: string, message: string) => new ConsoleError(502, "Upstream", `${what}: ${message}`),
  notConfigured: (what: string) => new ConsoleError(503, "NotConfigured", `${what} is not configured on this console`),
};

/** Any error as the status and words the page shows: API server refusals keep their own message. */
export function toConsoleError(err: unknown): ConsoleError {
  if (err instanceof ConsoleError) return err;
  if (err instanceof KubeApiError) {
    const status = err.status === 401 ? 401 : err.status >= 500 ? 502 : err.status;
    const message = err.status === 401 ? "the API server no longer accepts your token: sign in again" : err.message;
    return new ConsoleError(status, err.reason || `HTTP${err.status}`, message);
  }
  const message = err instanceof Error ? err.message : String(err);
  return new ConsoleError(502, "Unavailable", `the Kubernetes API server could not be reached: ${message}`);
}
