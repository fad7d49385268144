// The OpenTelemetry SDK, loaded only by a process that exports traces (tracing.ts imports this
// module on demand: its packages, the exporters NodeSDK brings with it, and the instrumentations
// are several MiB of heap that a process exporting nothing never pays for).
//
// Spans leave the process over OTLP/HTTP with undici (trace-export.ts) unless the environment asks
// for another exporter.
//
// One server span per request (trace-server.ts, sampled at the door: trace-sampling.ts), one
// client span per outgoing call inside a recorded trace (undici and fetch: trace-client.ts; Redis:
// trace-redis.ts; node:http: OpenTelemetry's instrumentation), and the services' own spans per
// step of work.
import { createRequire, syncBuiltinESMExports } from "node:module";
import { type Tracer, trace } from "@opentelemetry/api";
import type { Instrumentation } from "@opentelemetry/instrumentation";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { traceUndiciRequests } from "./trace-client.ts";
import { otlpHttpProtocol, UndiciOtlpTraceExporter } from "./trace-export.ts";
import { injectIntoUndici, joinCallers } from "./trace-propagation.ts";
import { traceRedisCommands } from "./trace-redis.ts";
import { baseResourceAttributes } from "./trace-resource.ts";
import { door, newTraceRatioFromEnv, samplerFromEnv } from "./trace-sampling.ts";
import { traceFastifyRequests } from "./trace-server.ts";

/** A started SDK and the undo of what was subscribed beside it. */
export interface StartedSdk {
  sdk: NodeSDK;
  undo(): void;
}

/** A tracer looked up on first use, once the SDK has registered its provider. */
function lazyTracer(name: string): () => Tracer {
  let cached: Tracer | undefined;
  return () => {
    cached ??= trace.getTracer(name);
    return cached;
  };
}
const serverTracer = lazyTracer("@capstan/shared/trace-server");
const clientTracer = lazyTracer("@capstan/shared/trace-client");
const redisTracer = lazyTracer("@capstan/shared/trace-redis");

/** True when the code running now is inside a span that is recorded (a sampled trace). */
function recording(): boolean {
  return trace.getActiveSpan()?.isRecording() === true;
}

/**
 * Whether the instrumentation of this name (`http`, `undici`, `ioredis`) is on: all are, less
 * those OTEL_NODE_DISABLED_INSTRUMENTATIONS names (or only those OTEL_NODE_ENABLED_INSTRUMENTATIONS
 * names; comma-separated, the variables of OpenTelemetry's auto-instrumentations package).
 */
export function instrumentationOn(name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const names = (v: string | undefined) =>
    new Set(
      (v ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    );
  const enabled = names(env.OTEL_NODE_ENABLED_INSTRUMENTATIONS);
  return (enabled.size === 0 || enabled.has(name)) && !names(env.OTEL_NODE_DISABLED_INSTRUMENTATIONS).has(name);
}

/**
 * The OpenTelemetry instrumentations a process registers when it exports traces (`http`; `undici`
 * and `ioredis` are trace-client.ts's and trace-redis.ts's, registered by startExporting), as
 * instrumentationOn says. Exported so tests can register the same ones against an in-memory
 * tracer provider.
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
  };
  return Object.entries(all)
    .filter(([name]) => instrumentationOn(name, env))
    .map(([, make]) => make());
}

/**
 * Exports spans: the sampler of OTEL_TRACES_SAMPLER, taken at the door; the process's Resource
 * (its name and, in a pod, its k8s.* attributes; the SDK's environment detector merges
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES over them: NodeSDK's own serviceName option would
 * override OTEL_SERVICE_NAME, so it is not used); the instrumentations, with the modules they patch
 * loaded at once.
 */
export function startExporting(serviceName: string, env: NodeJS.ProcessEnv): StartedSdk {
  const sampling = door(samplerFromEnv(env), newTraceRatioFromEnv(env));
  const resource = defaultResource().merge(resourceFromAttributes(baseResourceAttributes(serviceName, env)));
  // OTLP over HTTP goes through undici (trace-export.ts); any other exporter is the SDK's, built
  // from the same variables.
  const protocol = otlpHttpProtocol(env);
  const traceExporter = protocol ? new UndiciOtlpTraceExporter(protocol) : undefined;
  const sdk = new NodeSDK({
    resource,
    instrumentations: instrumentations(env),
    sampler: sampling.sampler,
    traceExporter,
  });
  sdk.start();
  const undoServer = traceFastifyRequests(sampling, serverTracer);
  const undoClient = instrumentationOn("undici", env) ? traceUndiciRequests(clientTracer) : () => {};
  const undoRedis = instrumentationOn("ioredis", env) ? traceRedisCommands(redisTracer) : () => {};
  const undoInject = injectIntoUndici();
  loadPatched();
  return {
    sdk,
    undo: () => {
      undoServer();
      undoClient();
      undoRedis();
      undoInject();
    },
  };
}

/**
 * Passes a caller's trace context on without exporting, for propagators other than W3C's
 * (OTEL_PROPAGATORS=b3, jaeger...), which only the SDK's environment set-up knows: no span
 * processor, no instrumentation.
 */
export function startPropagating(): StartedSdk {
  const sdk = new NodeSDK({ instrumentations: [], spanProcessors: [] });
  sdk.start();
  const undoJoin = joinCallers();
  const undoInject = injectIntoUndici();
  return {
    sdk,
    undo: () => {
      undoJoin();
      undoInject();
    },
  };
}

/**
 * The http instrumentation patches node:http when it goes through require(); an ESM `import` of a
 * builtin does not. So it is required here, once, right after the SDK starts, and the ESM named
 * bindings (`import { request } from "node:http"`) are refreshed from the patched exports by
 * syncBuiltinESMExports(). (trace-redis.ts patches ioredis's Redis prototype itself, which every
 * `import` of ioredis shares.)
 */
function loadPatched(): void {
  const require = createRequire(import.meta.url);
  for (const id of ["node:http", "node:https"]) require(id);
  syncBuiltinESMExports();
}

export { traceUndiciRequests } from "./trace-client.ts";
export { otlpHttpProtocol, UndiciOtlpTraceExporter } from "./trace-export.ts";
export { traceRedisCommands } from "./trace-redis.ts";
export { DEFAULT_SAMPLE_RATIO, door, newTraceRatioFromEnv, samplerFromEnv } from "./trace-sampling.ts";
export { traceFastifyRequests } from "./trace-server.ts";
