// The one error registry of the search service: each entry has a code, a message template and
// the HTTP status. Every error response is the search envelope {code, message, data: null} with
// code equal to the HTTP status; the registry code travels in the x-capstan-error header.
// Templates use the shared {name} syntax (renderMessage).
import { defineErrors, renderMessage } from "@capstan/shared";
import type { Envelope } from "@capstan/shared/clients/search-wire";

export interface ErrorDef {
  status: number;
  message: string;
}

export const ERRORS = defineErrors({
  SEARCH_ERR_BODY_INVALID: { status: 400, message: "invalid request body: {detail}" },
  SEARCH_ERR_KNOWLEDGE_ID: {
    status: 400,
    message: "knowledge id is invalid or permissions are insufficient: {knowledgeId}",
  },
  SEARCH_ERR_UNAUTHENTICATED: { status: 401, message: "authentication failed: key missing, invalid or expired" },
  SEARCH_ERR_INTERNAL_AUTH: { status: 401, message: "authentication failed: internal token missing or invalid" },
  SEARCH_ERR_INTERNAL_DISABLED: {
    status: 401,
    message: "internal API disabled: no internal token is configured (CAPSTAN_INTERNAL_TOKEN)",
  },
  SEARCH_ERR_IP_FORBIDDEN: { status: 403, message: "client address is not allowed to use this key" },
  SEARCH_ERR_WRITE_FORBIDDEN: {
    status: 403,
    message: "this key may not write to knowledge base {knowledgeId}: it needs the write permission",
  },
  SEARCH_ERR_DOCUMENT_INVALID: { status: 400, message: "document cannot be converted: {detail}" },
  SEARCH_ERR_DOCUMENT_TYPE: {
    status: 415,
    message:
      "unsupported document type '{got}': send Markdown (text/markdown), text (text/plain), HTML (text/html) or PDF (application/pdf)",
  },
  SEARCH_ERR_NOT_FOUND: { status: 404, message: "not found: {detail}" },
  SEARCH_ERR_METHOD: { status: 405, message: "method {method} not allowed on {url}; use {allow}" },
  SEARCH_ERR_BODY_TOO_LARGE: { status: 413, message: "request body too large (limit {limit} bytes)" },
  SEARCH_ERR_MEDIA_TYPE: {
    status: 415,
    message: "unsupported content type '{got}': send the body as JSON with 'Content-Type: application/json'",
  },
  SEARCH_ERR_RATE_LIMITED: {
    status: 429,
    message: "rate limit exceeded: at most {limit} requests per minute with this key; retry after {retryAfter} s",
  },
  SEARCH_ERR_LIMITER: { status: 503, message: "rate limiter unavailable: retry later" },
  SEARCH_ERR_EMBEDDING: { status: 503, message: "embedding provider unavailable: {detail}" },
  SEARCH_ERR_STORE: { status: 503, message: "vector store unavailable: {detail}" },
  SEARCH_ERR_NOT_READY: { status: 503, message: "service not ready: {detail}" },
  SEARCH_ERR_INTERNAL: { status: 500, message: "internal error" },
} as const satisfies Record<string, ErrorDef>);

export type ErrorCode = keyof typeof ERRORS;

export class SearchError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Response headers the error carries (429: Retry-After and the rate-limit fields). */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    params: Record<string, string | number> = {},
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(renderMessage(ERRORS[code].message, params), options);
    this.name = "SearchError";
    this.code = code;
    this.status = ERRORS[code].status;
    this.headers = options?.headers ?? {};
  }
}

/** The {code, message, data} envelope every answer is in (the wire schema clients parse it with). */
export type { Envelope } from "@capstan/shared/clients/search-wire";

export const SUCCESS_MESSAGE = "success";

export function ok<T>(data: T, message = SUCCESS_MESSAGE): Envelope<T> {
  return { code: 200, message, data };
}

export function errorEnvelope(err: SearchError): Envelope<never> {
  return { code: err.status, message: err.message, data: null };
}
