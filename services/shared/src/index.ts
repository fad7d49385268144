export * from "./config.ts";
export { nearest, unknownKeys } from "./config-keys.ts";
export * from "./errors.ts";
export * from "./http.ts";
export * from "./keys.ts";
export * from "./lifecycle.ts";
export * from "./logger.ts";
export * from "./metrics.ts";
export * from "./tracing.ts";
