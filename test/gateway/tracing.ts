// An in-memory OpenTelemetry setup for tests: the W3C propagator, async context, a tracer
// provider whose finished spans can be read back, and the processes' own instrumentations that
// need no module patching (@fastify/otel and undici listen on diagnostics channels; the http and
// ioredis ones patch modules at load, which only a process of its own can order: see
// test/foundation/trace.test.ts for those).
import { instrumentations } from "@capstan/shared/tracing";
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
    instrumentations: instrumentations().filter((i) => /fastify|undici/.test(i.instrumentationName)),
  });
  return {
    exporter,
    async shutdown() {
      unregister();
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
