// The scraper process's entry point. Tracing starts first: the http and ioredis instrumentations
// patch those modules as they load, so the process itself (start.ts) is imported only after.
import { startTracing } from "@capstan/shared/tracing";

// The rendering service (SCRAPER_ROLE=render, the pod's second container) is a service of its own
// in traces: its spans sit below the API's "GET /scrape" calls.
await startTracing(process.env.SCRAPER_ROLE === "render" ? "capstan-scraper-render" : "capstan-scraper");
await import("./start.ts");
