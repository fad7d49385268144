// What a limiter answers, and how that answer is written as response headers: the OpenAI
// x-ratelimit-* fields, the IETF RateLimit / RateLimit-Policy fields
// (draft-ietf-httpapi-ratelimit-headers) and, on 429, Retry-After.

export interface LimitDecision {
  allowed: boolean;
  limit: number;
  /** Requests still allowed in the current window after this one. */
  remaining: number;
  /** Milliseconds until the oldest counted request leaves the window (a slot frees up). */
  resetMs: number;
  windowMs: number;
  backend: "redis" | "local" | "none";
}

/** OpenAI's duration notation: 20ms, 1.5s, 6m0s. */
export function formatDuration(ms: number): string {
  const v = Math.max(0, Math.ceil(ms));
  if (v < 1000) return `${v}ms`;
  if (v < 60_000) return `${Number((v / 1000).toFixed(3))}s`;
  const m = Math.floor(v / 60_000);
  const s = Math.ceil((v % 60_000) / 1000);
  return `${m}m${s}s`;
}

/** Whole seconds a client should wait; at least 1 so a retry is never immediate. */
export function retryAfterSeconds(d: LimitDecision): number {
  return Math.max(1, Math.ceil(d.resetMs / 1000));
}

export function rateLimitHeaders(d: LimitDecision): Record<string, string> {
  if (d.backend === "none") return {};
  const resetSeconds = Math.max(0, Math.ceil(d.resetMs / 1000));
  const windowSeconds = Math.ceil(d.windowMs / 1000);
  const remaining = Math.max(0, d.remaining);
  const headers: Record<string, string> = {
    "x-ratelimit-limit-requests": String(d.limit),
    "x-ratelimit-remaining-requests": String(remaining),
    "x-ratelimit-reset-requests": formatDuration(d.resetMs),
    "ratelimit-policy": `"qpm";q=${d.limit};w=${windowSeconds}`,
    ratelimit: `"qpm";r=${remaining};t=${resetSeconds}`,
  };
  if (!d.allowed) headers["retry-after"] = String(retryAfterSeconds(d));
  return headers;
}
