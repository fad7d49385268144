// The scraper's one error registry: every failure a caller can see has a code, a message
// template and an HTTP status, declared here once. The rendering service sends the code over
// the wire, so the API rebuilds the same error on its side.
export const ERRORS = {
  BAD_REQUEST: { status: 400, message: "invalid request: %s" },
  BAD_URL: { status: 400, message: "invalid url: %s" },
  BAD_SELECTOR: { status: 400, message: "invalid selector for extractor '%s'" },
  UNAUTHORIZED: { status: 401, message: "missing or invalid API key" },
  BLOCKED_TARGET: { status: 403, message: "target blocked by SSRF policy: %s" },
  NOT_FOUND: { status: 404, message: "route not found: %s" },
  METHOD_NOT_ALLOWED: { status: 405, message: "method %s not allowed on %s; use %s" },
  MEDIA_TYPE: {
    status: 415,
    message: "unsupported request content type '%s': send the body as JSON with 'Content-Type: application/json'",
  },
  PAYLOAD_TOO_LARGE: { status: 413, message: "request body too large" },
  UNSUPPORTED_CONTENT: { status: 415, message: "unsupported content type: %s" },
  UNREACHABLE: { status: 502, message: "target unreachable: %s" },
  RENDERER_UNAVAILABLE: { status: 503, message: "rendering service unavailable: %s" },
  QUEUE_FULL: { status: 503, message: "too many requests in flight, retry later" },
  FEATURE_DISABLED: { status: 501, message: "%s is not configured" },
  UPSTREAM_ERROR: { status: 502, message: "%s" },
  TIMEOUT: { status: 504, message: "timed out after %d ms (%s)" },
  INTERNAL: { status: 500, message: "internal error" },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

function format(template: string, args: ReadonlyArray<string | number>): string {
  let i = 0;
  return template.replace(/%[sd]/g, () => String(args[i++] ?? ""));
}

export class ScraperError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Seconds, sent as Retry-After on 503. */
  readonly retryAfter: number | undefined;

  constructor(code: ErrorCode, args: ReadonlyArray<string | number> = [], opts: { retryAfter?: number } = {}) {
    super(format(ERRORS[code].message, args));
    this.name = "ScraperError";
    this.code = code;
    this.status = ERRORS[code].status;
    this.retryAfter = opts.retryAfter;
  }

  /** Rebuilds an error received over the wire, keeping its message as sent. */
  static fromWire(code: string, message: string, retryAfter?: number): ScraperError {
    const known = (code in ERRORS ? code : "UPSTREAM_ERROR") as ErrorCode;
    const err = new ScraperError(known, [], retryAfter === undefined ? {} : { retryAfter });
    err.message = message;
    return err;
  }

  toBody(): { success: false; error: string; code: ErrorCode } {
    return { success: false, error: this.message, code: this.code };
  }
}

export function isScraperError(err: unknown): err is ScraperError {
  return err instanceof ScraperError;
}
