// Retry-After (RFC 9110 §10.2.3): either a number of seconds or an HTTP-date. Both forms are
// honoured by the resilience policy; anything else is ignored (the policy's own backoff applies).

/** Milliseconds to wait from `now`, or undefined when the value is absent or unreadable. */
export function parseRetryAfter(value: string | number | null | undefined, now = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) : undefined;
  const text = value.trim();
  if (text === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  // An HTTP-date has a weekday and a zone; a bare number never reaches here.
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
