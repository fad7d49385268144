// OpenTelemetry bootstrap from the standard OTEL_* variables (OTEL_SERVICE_NAME,
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_EXPORTER, OTEL_TRACES_SAMPLER, ...), W3C trace context
// as the propagator. Tracing is meant to stay on in production, so it costs what it tells:
//
// - With an exporter configured, traces are sampled parent-based: a caller's decision (the
//   sampled flag of its `traceparent`) is kept, and new traces are sampled at
//   OTEL_TRACES_SAMPLER_ARG (default 0.01) unless OTEL_TRACES_SAMPLER says otherwise. The
//   decision is taken before any span exists (trace-sampling.ts): an unsampled request builds no
//   span objects; only its trace context is passed on.
// - With no exporter configured, no tracer provider and no instrumentation is registered (no
//   span is ever built, no module patched): only a caller's `traceparent` is passed on,
//   untouched, to the calls made while serving it; a request that carries none costs one header
//   lookup.
//
// Every span carries the process's Resource: its service name and, in a pod, the k8s.* attributes
// of the downward API (trace-resource.ts).
//
// Spans carry information or are not made: one server span per request (trace-server.ts, named
// after the Fastify route), one client span per outgoing call (the undici, node:http and ioredis
// instrumentations), and the services' own spans per step of work. bench/gateway/tracing.ts
// measures what each setting costs (docs/benchmarks.md).
//
// A process that exports nothing loads none of the SDK: only the API, its context manager and
// W3C's propagators (trace-propagation.ts). The SDK, its exporters and the instrumentations
// (trace-sdk.ts) are imported when an exporter is configured.
//
// The http (client side) and ioredis instrumentations patch modules when they are require()d, so a
// process starts tracing BEFORE it imports fastify, ioredis or its own app: each main.ts imports
// only this file ("@capstan/shared/tracing") statically, awaits startTracing(), and imports the
// rest with a dynamic import() afterwards. undici and Fastify announce their requests and
// instances on diagnostics channels and need no patching.
import {
  type Context,
  context,
  propagation,
  type Span,
  type SpanOptions,
  SpanStatusCode,
  type TextMapPropagator,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from "@opentelemetry/core";
import { injectIntoUndici, joinCallers } from "./trace-propagation.ts";

/** What startTracing() set up: the SDK when it was loaded, and the undo of the rest. */
interface Started {
  sdk?: { shutdown(): Promise<void> };
  undo(): void;
}

let started: Started | undefined;

export interface TracingHandle {
  shutdown(): Promise<void>;
}

/** Starts tracing once per process. `OTEL_SDK_DISABLED=true` turns it off. */
export async function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): Promise<TracingHandle> {
  if (started || env.OTEL_SDK_DISABLED === "true") return { shutdown: async () => {} };
  if (!env.OTEL_SERVICE_NAME) process.env.OTEL_SERVICE_NAME = serviceName;
  process.env.OTEL_METRICS_EXPORTER ??= "none";
  process.env.OTEL_LOGS_EXPORTER ??= "none";
  if (exporting(env)) {
    const { startExporting } = await import("./trace-sdk.ts");
    started = startExporting(serviceName, env);
  } else if (w3cOnly(env)) {
    started = propagateW3C(env);
  } else {
    const { startPropagating } = await import("./trace-sdk.ts");
    started = startPropagating();
  }
  return { shutdown: shutdownTracing };
}

function exporting(env: NodeJS.ProcessEnv): boolean {
  return Boolean(
    (env.OTEL_TRACES_EXPORTER && env.OTEL_TRACES_EXPORTER !== "none") ||
      env.OTEL_EXPORTER_OTLP_ENDPOINT ||
      env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
  );
}

/** OTEL_PROPAGATORS names only W3C's propagators (its default: `tracecontext,baggage`), or none. */
function w3cOnly(env: NodeJS.ProcessEnv): boolean {
  return propagatorNames(env).every((name) => name in W3C_PROPAGATORS || name === "none");
}

function propagatorNames(env: NodeJS.ProcessEnv): string[] {
  const names = (env.OTEL_PROPAGATORS ?? "tracecontext,baggage").split(",").map((s) => s.trim());
  return names.filter(Boolean);
}

const W3C_PROPAGATORS: Record<string, () => TextMapPropagator> = {
  tracecontext: () => new W3CTraceContextPropagator(),
  baggage: () => new W3CBaggagePropagator(),
};

/**
 * No exporter: what the SDK would set up, without loading it: the context manager and W3C's
 * propagators. With no tracer provider, the API's no-op tracer hands the caller's span context
 * through unchanged.
 */
function propagateW3C(env: NodeJS.ProcessEnv): Started {
  const manager = new AsyncLocalStorageContextManager();
  manager.enable();
  context.setGlobalContextManager(manager);
  const names = propagatorNames(env).filter((name) => name in W3C_PROPAGATORS);
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: names.map((name) => (W3C_PROPAGATORS[name] as () => TextMapPropagator)()) }),
  );
  const undoJoin = joinCallers();
  const undoInject = injectIntoUndici();
  return {
    undo: () => {
      undoJoin();
      undoInject();
      propagation.disable();
      context.disable();
    },
  };
}

/** Flushes the spans not yet exported and stops what startTracing() started, if anything. */
export async function shutdownTracing(): Promise<void> {
  const current = started;
  started = undefined;
  current?.undo();
  await current?.sdk?.shutdown();
}

/** A trace context captured with `activeTraceContext()`, to run later work in. */
export type TraceContext = Context;

/** The trace context of the code running now. */
export function activeTraceContext(): TraceContext {
  return context.active();
}

/**
 * Runs fn in a captured trace context: for callbacks that some other connection's events invoke
 * (Playwright's request routing, for one), which run in no request's context, so their spans and
 * outgoing `traceparent` would otherwise start new traces.
 */
export function inTraceContext<T>(ctx: TraceContext, fn: () => T): T {
  return context.with(ctx, fn);
}

export function tracer(name: string): Tracer {
  return trace.getTracer(name);
}

/** Runs fn in a child span, recording exceptions and ending the span whatever happens. */
export async function withSpan<T>(
  t: Tracer,
  name: string,
  fn: (span: Span) => Promise<T>,
  options: SpanOptions = {},
): Promise<T> {
  return t.startActiveSpan(name, options, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}
export { K8S_RESOURCE_ENV, k8sResourceAttributes } from "./trace-resource.ts";
