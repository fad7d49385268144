// Head sampling at the door (trace-sdk.ts and trace-server.ts use it, only when a process exports
// traces).
//
// The OpenTelemetry SDK decides whether to sample a trace only when its first span is started;
// an instrumentation has by then read the request's attributes and bound its events, and every
// call made while serving it does the same again. For an SRE to leave tracing on at a 1 % sampler,
// the other 99 % of requests must cost next to nothing. So the decision is taken first, at the
// door (trace-server.ts's onRequest hook), with the configured sampler:
//
// - sampled: the request gets its server span; the SDK's sampler (door().sampler) keeps the
//   door's decision for that span instead of rolling the dice again;
// - not sampled: no span is made; the request runs with tracing suppressed (spans started
//   meanwhile are no-ops) and only its trace context is passed on: the caller's `traceparent`
//   (unsampled), or for a request with none a fresh unsampled one, so the services it calls keep
//   the "not sampled" decision instead of starting traces of their own (trace-propagation.ts).
import {
  type Attributes,
  type Context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type SpanContext,
  SpanKind,
  TraceFlags,
  trace,
} from "@opentelemetry/api";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  RandomIdGenerator,
  type Sampler,
  SamplingDecision,
  type SamplingResult,
  TraceIdRatioBasedSampler,
} from "@opentelemetry/sdk-trace-base";
import { unsampledContext } from "./trace-propagation.ts";

/** The share of new traces sampled when an exporter is set and OTEL_TRACES_SAMPLER is not. */
export const DEFAULT_SAMPLE_RATIO = 0.01;

/**
 * The sampler of OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG (the specification's names);
 * parent-based with a ratio of DEFAULT_SAMPLE_RATIO when unset or unknown.
 */
export function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const arg = Number(env.OTEL_TRACES_SAMPLER_ARG);
  const ratio = env.OTEL_TRACES_SAMPLER_ARG && arg >= 0 && arg <= 1 ? arg : DEFAULT_SAMPLE_RATIO;
  switch (env.OTEL_TRACES_SAMPLER) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return new TraceIdRatioBasedSampler(ratio);
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    default:
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}

const ids = new RandomIdGenerator();

/** A sampling decision taken before any span exists, and the SDK sampler that keeps it. */
export interface Door {
  /**
   * Whether a request's trace is sampled, from its headers: sampled, the caller's context to
   * start the server span in; not sampled, the context to serve the request in
   * (unsampledContext()).
   */
  decide(headers: Record<string, unknown>): { sampled: true; parent: Context } | { sampled: false; context: Context };
  /** The SDK's sampler: the configured one, except that a root server span was admitted already. */
  sampler: Sampler;
}

export function door(configured: Sampler): Door {
  return {
    decide(headers) {
      const parent = propagation.extract(ROOT_CONTEXT, headers);
      const caller = trace.getSpanContext(parent);
      // A root's trace id is not known yet (the SDK makes it); a random one serves for a ratio,
      // and is the one passed on when the trace is not sampled.
      const traceId = caller?.traceId ?? ids.generateTraceId();
      const result = configured.shouldSample(parent, traceId, "", SpanKind.SERVER, {}, []);
      if (result.decision === SamplingDecision.RECORD_AND_SAMPLED) return { sampled: true, parent };
      return { sampled: false, context: unsampledContext(parent, caller ?? freshUnsampled(traceId)) };
    },
    sampler: {
      shouldSample(ctx: Context, traceId: string, name: string, kind: SpanKind, attributes: Attributes, links: Link[]) {
        if (kind === SpanKind.SERVER && !trace.getSpanContext(ctx)) {
          return { decision: SamplingDecision.RECORD_AND_SAMPLED } satisfies SamplingResult;
        }
        return configured.shouldSample(ctx, traceId, name, kind, attributes, links);
      },
      toString: () => `Door{${configured.toString()}}`,
    },
  };
}

function freshUnsampled(traceId: string): SpanContext {
  return { traceId, spanId: ids.generateSpanId(), traceFlags: TraceFlags.NONE, isRemote: true };
}
