// The scraper's one error registry: every failure a caller can see has a code, a message
// template and an HTTP status, declared here once. The rendering service sends the code over
// the wire, so the API rebuilds the same error on its side. Templates use the shared {name}
// syntax (renderMessage); call sites pass the values in order of appearance.
import { defineErrors, renderMessage } from "@capstan/shared";
import type { ScraperErrorCode } from "@capstan/shared/clients/scraper-wire";

export const ERRORS = defineErrors({
  BAD_REQUEST: { status: 400, message: "invalid request: {detail}" },
  BAD_URL: { status: 400, message: "invalid url: {detail}" },
  BAD_SELECTOR: { status: 400, message: "invalid selector for extractor '{name}'" },
  UNAUTHORIZED: { status: 401, message: "missing or invalid API key" },
  BLOCKED_TARGET: { status: 403, message: "target blocked by SSRF policy: {detail}" },
  NOT_FOUND: { status: 404, message: "route not found: {route}" },
  // A Firecrawl route the SDKs know (extract, search, deep research, …) that this scraper does not serve.
  FIRECRAWL_UNSUPPORTED: {
    status: 404,
    message: "{route}: a Firecrawl route Capstan's scraper does not serve (docs/scraper.md, Firecrawl compatibility)",
  },
  JOB_NOT_FOUND: { status: 404, message: "{kind} job {id} not found (unknown, or expired)" },
  JOB_FINISHED: { status: 409, message: "{kind} job {id} already {status}: nothing to cancel" },
  METHOD_NOT_ALLOWED: { status: 405, message: "method {method} not allowed on {url}; use {allow}" },
  MEDIA_TYPE: {
    status: 415,
    message: "unsupported request content type '{got}': send the body as JSON with 'Content-Type: application/json'",
  },
  PAYLOAD_TOO_LARGE: { status: 413, message: "request body too large" },
  UNSUPPORTED_CONTENT: { status: 415, message: "unsupported content type: {type}" },
  UNREACHABLE: { status: 502, message: "target unreachable: {detail}" },
  RENDERER_UNAVAILABLE: { status: 503, message: "rendering service unavailable: {detail}" },
  QUEUE_FULL: { status: 503, message: "too many requests in flight, retry later" },
  // A client asking for more background jobs than the scraper runs at once: its own pace is the
  // problem (429, as Firecrawl answers a concurrency limit), not the service's health (503).
  JOBS_FULL: { status: 429, message: "{max} jobs already running (SCRAPER_JOBS_MAX_ACTIVE): retry later" },
  JOBS_KEPT_FULL: { status: 429, message: "{max} jobs kept and none finished (SCRAPER_JOBS_MAX): retry later" },
  // The shared jobs' Redis did not answer (REDIS_URL): the service's health, not the client's input.
  JOBS_UNAVAILABLE: { status: 503, message: "job store unavailable: {detail}" },
  FEATURE_DISABLED: { status: 501, message: "{feature} is not configured" },
  UPSTREAM_ERROR: { status: 502, message: "{detail}" },
  // The time given ran out: the request's own page-load timeout (pageOptions.timeout) or the
  // task's deadline, so 408 as Firecrawl answers a scrape timeout (SCRAPE_TIMEOUT), not a 5xx: a
  // page too slow for the time asked is not the service failing. Retried by clients like a 5xx.
  TIMEOUT: { status: 408, message: "timed out after {ms} ms ({what})" },
  INTERNAL: { status: 500, message: "internal error" },
  // Every code of the wire's SCRAPER_ERROR_CODES (what clients are told to expect), and no other.
} as const satisfies Record<ScraperErrorCode, { status: number; message: string }>);

export type ErrorCode = keyof typeof ERRORS;

export class ScraperError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Seconds, sent as Retry-After on 503. */
  readonly retryAfter: number | undefined;

  constructor(code: ErrorCode, args: ReadonlyArray<string | number> = [], opts: { retryAfter?: number } = {}) {
    super(renderMessage(ERRORS[code].message, args));
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
