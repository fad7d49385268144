// Head sampling at the door, and trace context propagation without spans (tracing.ts and
// trace-server.ts use them).
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
//   the "not sampled" decision instead of starting traces of their own.
//
// With no exporter at all, the same propagation passes a caller's context on untouched.
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import {
  type Attributes,
  type Context,
  context,
  createContextKey,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type SpanContext,
  SpanKind,
  TraceFlags,
  trace,
} from "@opentelemetry/api";
import { core } from "@opentelemetry/sdk-node";
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
import type { FastifyInstance } from "fastify";

const { suppressTracing, unsuppressTracing } = core;

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

/** The trace context an unsampled request passes on, kept apart from the (suppressed) active span. */
const PASS_ON = createContextKey("capstan.trace.pass-on");

/** What PASS_ON holds: the span context, and the headers it injects once they were made. */
interface PassOn {
  spanContext: SpanContext;
  headers?: Record<string, string>;
}

function freshUnsampled(traceId: string): SpanContext {
  return { traceId, spanId: ids.generateSpanId(), traceFlags: TraceFlags.NONE, isRemote: true };
}

/** Most requests carry no trace header: their context derives from this one, made once. */
const SUPPRESSED_ROOT = suppressTracing(ROOT_CONTEXT);

/**
 * The context an unsampled request runs in: tracing suppressed and no active span (so neither
 * instrumentations nor the services' own spans build anything), the caller's baggage, and the
 * trace context to pass on (the caller's, else a fresh unsampled one).
 */
export function unsampledContext(parent: Context, passOn: SpanContext): Context {
  const base = parent === ROOT_CONTEXT ? SUPPRESSED_ROOT : suppressTracing(trace.deleteSpan(parent));
  return base.setValue(PASS_ON, { spanContext: passOn } satisfies PassOn);
}

/** Calls fn with every Fastify instance created from now on; returns the undo. */
export function onEveryFastify(fn: (fastify: FastifyInstance) => void): () => void {
  const onInstance = (message: unknown) => fn((message as { fastify: FastifyInstance }).fastify);
  // Fastify publishes each new instance on this channel (what @fastify/otel registers itself by).
  subscribe("fastify.initialization", onInstance);
  return () => unsubscribe("fastify.initialization", onInstance);
}

/**
 * Without an exporter: a request with a `traceparent` is served in the caller's context (the
 * caller's span context is the active span: log lines carry its trace id, and with no tracer
 * provider registered the API's spans hand it through unchanged). Returns the undo.
 */
export function joinCallers(): () => void {
  return onEveryFastify((fastify) =>
    fastify.addHook("onRequest", (req, _reply, done) => {
      if (req.headers.traceparent === undefined) return done();
      // The rest of the request's hooks and its handler run inside done(), so in this context.
      context.with(propagation.extract(ROOT_CONTEXT, req.headers), done);
    }),
  );
}

/**
 * undici/fetch calls made outside a recorded span carry the trace context there is to pass on:
 * the active span's when it is valid (a caller's, without an exporter), else an unsampled
 * request's (with its baggage). Calls inside a recorded span are the undici instrumentation's.
 * Returns the undo.
 */
export function injectIntoUndici(): () => void {
  const onUndiciRequest = (message: unknown) => {
    const active = context.active();
    const span = trace.getSpan(active);
    if (span?.isRecording()) return;
    let headers: Record<string, string>;
    if (span !== undefined && trace.isSpanContextValid(span.spanContext())) {
      headers = {};
      propagation.inject(active, headers);
    } else {
      const passOn = active.getValue(PASS_ON) as PassOn | undefined;
      if (!passOn) return;
      // The propagators write nothing for a context whose tracing is suppressed, so the headers
      // are made from the same context unsuppressed; once per request, however many calls it makes.
      if (!passOn.headers) {
        passOn.headers = {};
        propagation.inject(trace.setSpanContext(unsuppressTracing(active), passOn.spanContext), passOn.headers);
      }
      headers = passOn.headers;
    }
    const { request } = message as { request: { addHeader(name: string, value: string): void } };
    for (const name in headers) request.addHeader(name, headers[name] as string);
  };
  subscribe("undici:request:create", onUndiciRequest);
  return () => unsubscribe("undici:request:create", onUndiciRequest);
}
