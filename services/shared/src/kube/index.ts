export * from "./client.ts";
export * from "./reflector.ts";
