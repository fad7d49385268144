// The search process's entry point. Tracing starts first: the http and ioredis instrumentations
// patch those modules as they load, so the process itself (start.ts) is imported only after.
import { startTracing } from "@capstan/shared/tracing";

await startTracing("capstan-search");
await import("./start.ts");
