// The operator's pure translators (resources in, desired objects and status out), for reuse by
// the standalone mode, which computes the same status without a cluster.
export * from "./agent.ts";
export * from "./common.ts";
export * from "./duration.ts";
export * from "./keys.ts";
export * from "./knowledge-base.ts";
export * from "./scraper.ts";
export * from "./workloads.ts";
