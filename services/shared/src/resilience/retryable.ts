// What is worth another attempt: one rule per protocol, used by every client's classification
// (the resilience policy retries what its client says is retryable). The few deliberate
// exceptions are here, beside the rule, with their reason.

/**
 * HTTP statuses another attempt may change: 408 (request timeout), 429 (rate limited; the
 * policy honours Retry-After) and every 5xx except 501 and 505, which say the server never will.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status !== 501 && status !== 505);
}

/**
 * LLM provider APIs (OpenAI, Azure OpenAI, Anthropic): the HTTP rule plus 409, as the providers'
 * official SDKs do (OpenAI answers 409 when a lock on the request timed out). Anthropic's 529
 * ("overloaded") is a 5xx already.
 */
export function isRetryableProviderStatus(status: number): boolean {
  return status === 409 || isRetryableStatus(status);
}

/** Connection failures a new connection may not meet (node:net's and undici's error codes). */
const RETRYABLE_NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** Whether a failed connection's error code is one another attempt may not meet. */
export function isRetryableNetworkCode(code: string | undefined): boolean {
  return code !== undefined && RETRYABLE_NETWORK_CODES.has(code);
}

/**
 * OTLP/HTTP exports (trace-export.ts): the statuses the OTLP specification names retryable, 429,
 * 502, 503 and 504; any other answer fails the batch, as OpenTelemetry's own exporters do.
 */
export function isRetryableOtlpStatus(status: number): boolean {
  return status === 429 || status === 502 || status === 503 || status === 504;
}

/**
 * OTLP/HTTP exports: the connection failures OpenTelemetry's exporters retry (node:net's codes,
 * a collector not resolvable or reachable yet included) and undici's own for the same.
 */
const RETRYABLE_OTLP_NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "ENOTFOUND",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

export function isRetryableOtlpNetworkCode(code: string | undefined): boolean {
  return code !== undefined && RETRYABLE_OTLP_NETWORK_CODES.has(code);
}
