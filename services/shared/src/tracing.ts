// OpenTelemetry bootstrap from the standard OTEL_* variables (OTEL_SERVICE_NAME,
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_EXPORTER, OTEL_TRACES_SAMPLER, ...). With no
// exporter configured, spans are still created (trace ids in logs, traceparent propagated)
// but not exported. W3C trace context is the propagator.
//
// The maintained instrumentations do the per-request work: http (server spans, W3C context
// extracted from incoming requests), @fastify/otel (route and hook spans), undici (client spans,
// traceparent injected into every outgoing request) and ioredis (one span per command). The
// http and ioredis ones patch modules when they are require()d, so a process starts tracing
// BEFORE it imports fastify, ioredis or its own app: each main.ts imports only this file
// ("@capstan/shared/tracing") statically and the rest with a dynamic import() afterwards.
// undici and @fastify/otel listen on diagnostics channels and need no patching.
import { createRequire, syncBuiltinESMExports } from "node:module";
import { FastifyOtelInstrumentation } from "@fastify/otel";
import { type Context, context, type Span, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";
import type { Instrumentation } from "@opentelemetry/instrumentation";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { IORedisInstrumentation } from "@opentelemetry/instrumentation-ioredis";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { NoopSpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { FastifyRequest } from "fastify";

let sdk: NodeSDK | undefined;

export interface TracingHandle {
  shutdown(): Promise<void>;
}

/** Probe and scrape paths: polled every few seconds, never worth a trace. */
const UNTRACED_PATHS = new Set(["/healthz", "/readyz", "/livez", "/metrics", "/health"]);

function untraced(url: string | undefined): boolean {
  return UNTRACED_PATHS.has((url ?? "").split("?")[0] ?? "");
}

/**
 * The instrumentations every process registers. Exported so tests can register the same ones
 * against an in-memory tracer provider.
 */
export function instrumentations(): Instrumentation[] {
  return [
    // Outgoing calls are traced inside a trace only: a watch or a lease renewal on its own
    // is not worth a root span of its own.
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req) => untraced(req.url),
      requireParentforOutgoingSpans: true,
    }),
    new UndiciInstrumentation({ requireParentforSpans: true }),
    // Its default statement serializer keeps only the arguments of commands known to be safe
    // (key names of GET/INCR/EVAL...), never values or AUTH passwords.
    new IORedisInstrumentation({ requireParentSpan: true }),
    new FastifyOtelInstrumentation({
      registerOnInitialization: true,
      ignorePaths: (route) => untraced(route.url),
    }) as unknown as Instrumentation,
  ];
}

/** Starts the SDK once per process. `OTEL_SDK_DISABLED=true` turns it off. */
export function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): TracingHandle {
  if (sdk || env.OTEL_SDK_DISABLED === "true") return { shutdown: async () => {} };
  if (!env.OTEL_SERVICE_NAME) process.env.OTEL_SERVICE_NAME = serviceName;
  const exporting = Boolean(
    (env.OTEL_TRACES_EXPORTER && env.OTEL_TRACES_EXPORTER !== "none") ||
      env.OTEL_EXPORTER_OTLP_ENDPOINT ||
      env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
  );
  process.env.OTEL_METRICS_EXPORTER ??= "none";
  process.env.OTEL_LOGS_EXPORTER ??= "none";
  // The SDK registers no tracer provider when nothing exports; a no-op processor keeps real
  // spans (and so trace ids in logs and traceparent propagation) without exporting them.
  sdk = new NodeSDK({
    serviceName,
    instrumentations: instrumentations(),
    ...(exporting ? {} : { spanProcessors: [new NoopSpanProcessor()] }),
  });
  sdk.start();
  loadPatched();
  return { shutdown: shutdownTracing };
}

/** Flushes the spans not yet exported and stops the SDK started by startTracing(), if any. */
export async function shutdownTracing(): Promise<void> {
  const current = sdk;
  sdk = undefined;
  await current?.shutdown();
}

/**
 * The instrumentations patch a module when it goes through require(); an ESM `import` of a
 * CommonJS package (ioredis) or of a builtin does not. So the patched modules are required here,
 * once, right after the SDK starts: a later `import` of ioredis gets the same, already patched
 * exports object, and ESM named bindings of builtins (`import { request } from "node:http"`)
 * are refreshed from the patched exports by syncBuiltinESMExports().
 */
function loadPatched(): void {
  const require = createRequire(import.meta.url);
  for (const id of ["node:http", "node:https", "ioredis"]) require(id);
  syncBuiltinESMExports();
}

/**
 * A Fastify request's trace context: the @fastify/otel request span's (child of the http server
 * span, itself a child of the caller's traceparent) when the instrumentation runs, else the
 * active one. Hooks run inside spans of their own that end with them; work that outlives a hook
 * (a streamed answer) starts from this context instead.
 */
export function requestTraceContext(req: FastifyRequest): Context {
  const otel = (req as { opentelemetry?: () => { context?: Context | null } }).opentelemetry?.();
  return otel?.context ?? context.active();
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
export async function withSpan<T>(t: Tracer, name: string, fn: (span: Span) => Promise<T>): Promise<T> {
  return t.startActiveSpan(name, async (span) => {
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
