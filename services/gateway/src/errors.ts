// The gateway's one error registry: every error a client can see, with its code, message
// template, HTTP status and OpenAI error type, defined once. Bodies follow the OpenAI shape
// {"error":{"message","type","param","code"}} so OpenAI SDKs raise their typed errors.
// Templates use the shared {name} syntax (renderMessage).
import { defineErrors, renderMessage } from "@capstan/shared";

export interface ErrorSpec {
  status: number;
  type: string;
  /** Message template; {name} placeholders are filled from the error's params. */
  message: string;
  /** Whether a client should retry (sent as x-should-retry). */
  retry: boolean;
}

export const ERRORS = defineErrors({
  missing_api_key: {
    status: 401,
    type: "invalid_request_error",
    message: "You didn't provide an API key. Send it as 'Authorization: Bearer <key>'.",
    retry: false,
  },
  invalid_api_key: {
    status: 401,
    type: "invalid_request_error",
    message: "Incorrect API key provided.",
    retry: false,
  },
  expired_api_key: {
    status: 401,
    type: "invalid_request_error",
    message: "The API key has expired.",
    retry: false,
  },
  invalid_request: { status: 400, type: "invalid_request_error", message: "{detail}", retry: false },
  invalid_json: {
    status: 400,
    type: "invalid_request_error",
    message: "The request body is not valid JSON: {detail}",
    retry: false,
  },
  request_too_large: {
    status: 413,
    type: "invalid_request_error",
    message: "The request body is larger than {limit} bytes.",
    retry: false,
  },
  unsupported_media_type: {
    status: 415,
    type: "invalid_request_error",
    message: "Unsupported content type '{got}': send the body as JSON with 'Content-Type: application/json'.{hint}",
    retry: false,
  },
  method_not_allowed: {
    status: 405,
    type: "invalid_request_error",
    message: "Method {method} is not allowed on {url}; use {allow}.",
    retry: false,
  },
  not_found: { status: 404, type: "invalid_request_error", message: "Unknown route {method} {url}.", retry: false },
  model_not_found: {
    status: 404,
    type: "invalid_request_error",
    message: "The model '{model}' does not exist for this key.",
    retry: false,
  },
  rate_limit_exceeded: {
    status: 429,
    type: "requests",
    message: "Rate limit reached: {limit} requests per minute. Retry in {retryAfter}s.",
    retry: true,
  },
  token_rate_limit_exceeded: {
    status: 429,
    type: "tokens",
    message: "Token rate limit reached: {limit} tokens per minute, {used} in use. Retry in {retryAfter}s.",
    retry: true,
  },
  budget_exhausted: {
    status: 429,
    type: "insufficient_quota",
    message: "The channel's token budget ({tokens} tokens per {period}) is spent; it starts again at {resetsAt}.",
    retry: false,
  },
  limiter_unavailable: {
    status: 503,
    type: "server_error",
    message: "The rate limiter is unavailable; try again shortly.",
    retry: true,
  },
  history_unavailable: {
    status: 503,
    type: "server_error",
    message: "History cannot be read right now (its store is unavailable); try again shortly.",
    retry: true,
  },
  usage_unavailable: {
    status: 503,
    type: "server_error",
    message: "Usage cannot be read: the gateway has no Redis (usage is only kept there).",
    retry: false,
  },
  agent_not_found: {
    status: 503,
    type: "server_error",
    message: "The agent bound to this key is not available.",
    retry: true,
  },
  provider_key_missing: {
    status: 502,
    type: "server_error",
    message: "The agent's provider key could not be read.",
    retry: false,
  },
  upstream_rate_limited: {
    status: 429,
    type: "requests",
    message: "The model provider is rate limiting requests: {detail}",
    retry: true,
  },
  upstreams_unavailable: {
    status: 503,
    type: "server_error",
    message:
      "Every upstream of this agent is failing and its circuit breaker is open; the next trial call is within {seconds}s.",
    retry: true,
  },
  upstream_bad_request: { status: 400, type: "invalid_request_error", message: "{detail}", retry: false },
  upstream_error: { status: 502, type: "server_error", message: "The model provider failed: {detail}", retry: true },
  upstream_refused: {
    status: 502,
    type: "server_error",
    message:
      "The agent's provider address is refused by the platform's egress policy: {rule}. A platform administrator can allow it (egress.allowedHosts).",
    retry: false,
  },
  upstream_timeout: {
    status: 504,
    type: "server_error",
    message: "The model provider did not answer within {timeoutMs} ms.",
    retry: true,
  },
  knowledge_unavailable: {
    status: 502,
    type: "server_error",
    message: "Knowledge retrieval failed: {detail}",
    retry: true,
  },
  server_shutting_down: {
    status: 503,
    type: "server_error",
    message:
      "The gateway is shutting down and could not finish this answer; the answer is incomplete. Retry the request.",
    retry: true,
  },
  internal_error: { status: 500, type: "server_error", message: "Internal server error.", retry: true },
} as const satisfies Record<string, ErrorSpec>);

export type ErrorCode = keyof typeof ERRORS;

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  readonly retry: boolean;
  /** Extra response headers (Retry-After, rate-limit fields). */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    params: Record<string, string | number> = {},
    opts: { param?: string | null; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    const spec: ErrorSpec = ERRORS[code];
    super(renderMessage(spec.message, params), opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "GatewayError";
    this.code = code;
    this.status = spec.status;
    this.type = spec.type;
    this.param = opts.param ?? null;
    this.retry = spec.retry;
    this.headers = opts.headers ?? {};
  }

  toBody(): OpenAIErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

export function isGatewayError(err: unknown): err is GatewayError {
  return err instanceof GatewayError;
}
