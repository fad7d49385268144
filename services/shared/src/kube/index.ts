export * from "./config.ts";
export * from "./http.ts";
export * from "./objects.ts";
export * from "./reflector.ts";
