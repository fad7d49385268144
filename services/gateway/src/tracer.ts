// The gateway's tracer, looked up once per tracer provider instead of on every span: the
// global provider is a proxy that is only replaced when tracing is reset (trace.disable(), as
// tests do), so the tracer is cached against the provider it came from. And the one check every
// span of the gateway's own makes first: is the code running now inside a recorded (sampled)
// trace? Outside one, no span object and no attribute is built (docs/observability.md).
import { type Context, context, type Tracer, trace } from "@opentelemetry/api";

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

/** True inside a span that is recorded: an unsampled request, or no exporter at all, is false. */
export function recordingNow(ctx: Context = context.active()): boolean {
  return trace.getSpan(ctx)?.isRecording() === true;
}
