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
// The http (client side) and ioredis instrumentations patch modules when they are require()d, so a process
// starts tracing BEFORE it imports fastify, ioredis or its own app: each main.ts imports only this
// file ("@capstan/shared/tracing") statically and the rest with a dynamic import() afterwards.
// undici and Fastify announce their requests and instances on diagnostics channels and need no
// patching.
import { createRequire, syncBuiltinESMExports } from "node:module";
import {
  type Context,
  context,
  type Span,
  type SpanOptions,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { Instrumentation } from "@opentelemetry/instrumentation";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { IORedisInstrumentation } from "@opentelemetry/instrumentation-ioredis";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { baseResourceAttributes } from "./trace-resource.ts";
import { door, injectIntoUndici, joinCallers, samplerFromEnv } from "./trace-sampling.ts";
import { traceFastifyRequests } from "./trace-server.ts";

let sdk: NodeSDK | undefined;
let cachedServerTracer: Tracer | undefined;
/** The tracer of the server spans, looked up once the SDK has registered its provider. */
const serverTracer = () => {
  cachedServerTracer ??= trace.getTracer("@capstan/shared/trace-server");
  return cachedServerTracer;
};
let unsubscribe: (() => void) | undefined;

export interface TracingHandle {
  shutdown(): Promise<void>;
}

/** True when the code running now is inside a span that is recorded (a sampled trace). */
function recording(): boolean {
  return trace.getActiveSpan()?.isRecording() === true;
}

/**
 * The instrumentations a process registers when it exports traces, by name (`http`, `undici`,
 * `ioredis`), less those OTEL_NODE_DISABLED_INSTRUMENTATIONS names (or only those
 * OTEL_NODE_ENABLED_INSTRUMENTATIONS names; comma-separated, the variables of OpenTelemetry's
 * auto-instrumentations package). Exported so tests can register the same ones against an
 * in-memory tracer provider.
 */
export function instrumentations(env: NodeJS.ProcessEnv = process.env): Instrumentation[] {
  // Factories: an instrumentation patches its module as soon as it is constructed, so the ones
  // left out are never made.
  const all: Record<string, () => Instrumentation> = {
    http: () =>
      new HttpInstrumentation({
        // Server spans are trace-server.ts's (sampled at the door); this one makes client spans.
        disableIncomingRequestInstrumentation: true,
        // Outgoing calls are traced inside a recorded trace only: a watch or a lease renewal on
        // its own is not worth a root span of its own, nor a call made for an unsampled request.
        ignoreOutgoingRequestHook: () => !recording(),
        requireParentforOutgoingSpans: true,
      }),
    undici: () => new UndiciInstrumentation({ requireParentforSpans: true, ignoreRequestHook: () => !recording() }),
    // Its default statement serializer keeps only the arguments of commands known to be safe
    // (key names of GET/INCR/EVAL...), never values or AUTH passwords.
    ioredis: () => new IORedisInstrumentation({ requireParentSpan: true }),
  };
  const names = (v: string | undefined) =>
    new Set(
      (v ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    );
  const enabled = names(env.OTEL_NODE_ENABLED_INSTRUMENTATIONS);
  const disabled = names(env.OTEL_NODE_DISABLED_INSTRUMENTATIONS);
  return Object.entries(all)
    .filter(([name]) => (enabled.size === 0 || enabled.has(name)) && !disabled.has(name))
    .map(([, make]) => make());
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
  if (!exporting) {
    // No span processor and no instrumentation: the SDK only sets up the context manager and the
    // propagator (OTEL_PROPAGATORS, W3C trace context and baggage by default). With no tracer
    // provider, the API's no-op tracer hands the caller's span context through unchanged.
    sdk = new NodeSDK({ instrumentations: [], spanProcessors: [] });
    sdk.start();
    const undoJoin = joinCallers();
    const undoInject = injectIntoUndici();
    unsubscribe = () => {
      undoJoin();
      undoInject();
    };
    return { shutdown: shutdownTracing };
  }
  const sampling = door(samplerFromEnv(env));
  // The process's name and, in a pod, its k8s.* attributes; the SDK's environment detector merges
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES over them (NodeSDK's own serviceName option
  // would override OTEL_SERVICE_NAME, so it is not used).
  const resource = defaultResource().merge(resourceFromAttributes(baseResourceAttributes(serviceName, env)));
  sdk = new NodeSDK({ resource, instrumentations: instrumentations(env), sampler: sampling.sampler });
  sdk.start();
  const undoServer = traceFastifyRequests(sampling, serverTracer);
  const undoInject = injectIntoUndici();
  unsubscribe = () => {
    undoServer();
    undoInject();
  };
  loadPatched();
  return { shutdown: shutdownTracing };
}

/** Flushes the spans not yet exported and stops the SDK started by startTracing(), if any. */
export async function shutdownTracing(): Promise<void> {
  const current = sdk;
  sdk = undefined;
  unsubscribe?.();
  unsubscribe = undefined;
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
export { DEFAULT_SAMPLE_RATIO, door, samplerFromEnv } from "./trace-sampling.ts";
export { traceFastifyRequests } from "./trace-server.ts";
