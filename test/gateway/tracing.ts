// An in-memory OpenTelemetry setup for tests: the W3C propagator, async context, a tracer
// provider whose finished spans can be read back (every trace sampled), the processes' own server
// spans (trace-server.ts, on every Fastify instance created afterwards) and undici/fetch client
// spans (trace-client.ts), which need no module patching (both listen on diagnostics channels). The
// node:http and ioredis client instrumentations patch modules at load, which only a process of its
// own can order: services/shared/src/tracing.test.ts and test/traces run those.
import { door, traceFastifyRequests, traceUndiciRequests } from "@capstan/shared/tracing/sdk";
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  AlwaysOnSampler,
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";

export function startTestTracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const unregister = traceUndiciRequests(() => provider.getTracer("test"));
  const unname = traceFastifyRequests(door(new AlwaysOnSampler()), () => trace.getTracer("test"));
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
