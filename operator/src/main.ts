// The operator's entry point. Tracing starts first: the http instrumentation patches node:http as
// it loads, so the operator itself (start.ts) is imported only after. Each reconcile is a trace of
// its own (controller/controller.ts), with the API server calls and the calls to search and the
// scraper below it.
import { startTracing } from "@capstan/shared/tracing";

await startTracing("capstan-operator");
await import("./start.ts");
