// An in-memory OpenTelemetry setup for tests: the W3C propagator, async context, a tracer
// provider whose finished spans can be read back (every trace sampled), and the processes' own
// http and undici instrumentations with server spans named by route. undici listens on
// diagnostics channels; node:http is patched when it is required again after the instrumentation
// is enabled, which patches the one shared http.Server prototype (servers started later in this
// process are traced). ioredis can only be patched before it loads: processes of their own do that
// (services/shared/src/tracing.test.ts, test/traces).
import { createRequire } from "node:module";
import { instrumentations, nameServerSpansByRoute } from "@capstan/shared/tracing";
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { registerInstrumentations } from "@opentelemetry/instrumentation";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

export function startTestTracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const unregister = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: instrumentations({ OTEL_NODE_ENABLED_INSTRUMENTATIONS: "http,undici" }),
  });
  createRequire(import.meta.url)("node:http");
  const unname = nameServerSpansByRoute();
  return {
    exporter,
    async shutdown() {
      unname();
      unregister();
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
