// Redis for the data plane: the topology (standalone, Sentinel, Cluster), the one client factory,
// and the hash-tag rule for keys used together.
export * from "./client.ts";
export * from "./keys.ts";
export * from "./topology.ts";
