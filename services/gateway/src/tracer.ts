// The gateway's tracer, looked up once per tracer provider instead of on every span: the
// global provider is a proxy that is only replaced when tracing is reset (trace.disable(), as
// tests do), so the tracer is cached against the provider it came from.
import { type Tracer, trace } from "@opentelemetry/api";

let provider: unknown;
let cached: Tracer | undefined;

export function tracerOf(): Tracer {
  const current = trace.getTracerProvider();
  if (cached === undefined || current !== provider) {
    provider = current;
    cached = current.getTracer("capstan-gateway");
  }
  return cached;
}
