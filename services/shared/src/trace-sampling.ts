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
//   (unsampled), or for a request with none a fresh unsampled one on each call, so the services
//   it calls keep the "not sampled" decision instead of starting traces of their own
//   (trace-propagation.ts).
//
// A request with no trace header (most of them) is a new trace: it is decided by one random
// number against the sampler's ratio for new traces, and left out it shares one context with all
// such requests (UNSAMPLED_ROOT), so it costs no id, no context and no header parsing.
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
import { sharedUnsampledContext, unsampledContext } from "./trace-propagation.ts";

/** The share of new traces sampled when an exporter is set and OTEL_TRACES_SAMPLER is not. */
export const DEFAULT_SAMPLE_RATIO = 0.01;

/**
 * The sampler of OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG (the specification's names);
 * parent-based with a ratio of DEFAULT_SAMPLE_RATIO when unset or unknown.
 */
export function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const ratio = ratioFromEnv(env);
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

/** OTEL_TRACES_SAMPLER_ARG when it is a ratio, else DEFAULT_SAMPLE_RATIO. */
function ratioFromEnv(env: NodeJS.ProcessEnv): number {
  const arg = Number(env.OTEL_TRACES_SAMPLER_ARG);
  return env.OTEL_TRACES_SAMPLER_ARG && arg >= 0 && arg <= 1 ? arg : DEFAULT_SAMPLE_RATIO;
}

/**
 * The share of new traces (requests with no caller's trace context) that samplerFromEnv(env)
 * samples: every sampler it makes decides a trace with no parent by a ratio, 0 and 1 included.
 */
export function newTraceRatioFromEnv(env: NodeJS.ProcessEnv): number {
  switch (env.OTEL_TRACES_SAMPLER) {
    case "always_on":
    case "parentbased_always_on":
      return 1;
    case "always_off":
    case "parentbased_always_off":
      return 0;
    default:
      return ratioFromEnv(env);
  }
}

const ids = new RandomIdGenerator();

/** The context of every unsampled request with no trace header (each call passes on new ids). */
export const UNSAMPLED_ROOT = sharedUnsampledContext(() => freshUnsampled(ids.generateTraceId()));

/** The decisions for a request with no trace header: made once, shared by every such request. */
const NEW_SAMPLED = { sampled: true, parent: ROOT_CONTEXT } as const;
const NEW_UNSAMPLED = { sampled: false, context: UNSAMPLED_ROOT } as const;

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

export function door(configured: Sampler, newTraceRatio?: number): Door {
  let fields: string[] | undefined;
  /** Whether the request carries any header of the global propagator (traceparent, baggage...). */
  const carriesContext = (headers: Record<string, unknown>) => {
    fields ??= propagation.fields().map((f) => f.toLowerCase());
    for (const field of fields) if (headers[field] !== undefined) return true;
    return false;
  };
  return {
    decide(headers) {
      // Most requests come with no trace context: a new trace, sampled at newTraceRatio (the
      // configured sampler's decision for a trace with no parent) with nothing else to compute.
      // Known when samplerFromEnv made the sampler; any other sampler is asked below.
      if (newTraceRatio !== undefined && !carriesContext(headers)) {
        return Math.random() < newTraceRatio ? NEW_SAMPLED : NEW_UNSAMPLED;
      }
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
