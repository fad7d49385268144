// Exact sliding-window rate limiting shared by the gateway and search (see limiter.ts).
export * from "./decision.ts";
export * from "./limiter.ts";
export * from "./memory-limiter.ts";
export * from "./redis-limiter.ts";
