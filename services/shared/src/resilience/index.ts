// One resilience policy for every outbound call: see policy.ts.
export * from "./policy.ts";
export { parseRetryAfter } from "./retry-after.ts";
export * from "./retryable.ts";
