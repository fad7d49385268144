// OpenTelemetry bootstrap from the standard OTEL_* variables (OTEL_SERVICE_NAME,
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_EXPORTER, OTEL_TRACES_SAMPLER, ...). With no
// exporter configured, spans are still created (trace ids in logs, traceparent propagated)
// but not exported. W3C trace context is the propagator.
import { type Span, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { NoopSpanProcessor } from "@opentelemetry/sdk-trace-base";

let sdk: NodeSDK | undefined;

export interface TracingHandle {
  shutdown(): Promise<void>;
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
  sdk = exporting
    ? new NodeSDK({ serviceName })
    : new NodeSDK({ serviceName, spanProcessors: [new NoopSpanProcessor()] });
  sdk.start();
  const current = sdk;
  return {
    shutdown: async () => {
      await current.shutdown();
      sdk = undefined;
    },
  };
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
