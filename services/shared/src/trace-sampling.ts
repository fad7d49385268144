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

const { suppressTracing } = core;

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
  /** The caller's context from a request's headers, and whether the request's trace is sampled. */
  decide(headers: Record<string, unknown>): { parent: Context; sampled: boolean };
  /** The SDK's sampler: the configured one, except that a root server span was admitted already. */
  sampler: Sampler;
}

export function door(configured: Sampler): Door {
  return {
    decide(headers) {
      const parent = propagation.extract(ROOT_CONTEXT, headers);
      // A root's trace id is not known yet (the SDK makes it); a random one serves for a ratio.
      const traceId = trace.getSpanContext(parent)?.traceId ?? ids.generateTraceId();
      const result = configured.shouldSample(parent, traceId, "", SpanKind.SERVER, {}, []);
      return { parent, sampled: result.decision === SamplingDecision.RECORD_AND_SAMPLED };
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

/**
 * The context an unsampled request runs in: tracing suppressed, and the trace context to pass on
 * (the caller's, else a fresh unsampled one).
 */
export function unsampledContext(parent: Context): Context {
  const passOn = trace.getSpanContext(parent) ?? {
    traceId: ids.generateTraceId(),
    spanId: ids.generateSpanId(),
    traceFlags: TraceFlags.NONE,
    isRemote: true,
  };
  return suppressTracing(ROOT_CONTEXT).setValue(PASS_ON, passOn);
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
 * request's. Calls inside a recorded span are the undici instrumentation's. Returns the undo.
 */
export function injectIntoUndici(): () => void {
  const onUndiciRequest = (message: unknown) => {
    const active = context.active();
    const span = trace.getSpan(active);
    if (span?.isRecording()) return;
    const valid = span !== undefined && trace.isSpanContextValid(span.spanContext());
    const passOn = active.getValue(PASS_ON) as SpanContext | undefined;
    if (!valid && !passOn) return;
    const headers: Record<string, string> = {};
    // An unsampled request runs with tracing suppressed, which the propagator honours: its
    // context is injected from a fresh one.
    propagation.inject(valid ? active : trace.setSpanContext(ROOT_CONTEXT, passOn as SpanContext), headers);
    const { request } = message as { request: { addHeader(name: string, value: string): void } };
    for (const [name, value] of Object.entries(headers)) request.addHeader(name, value);
  };
  subscribe("undici:request:create", onUndiciRequest);
  return () => unsubscribe("undici:request:create", onUndiciRequest);
}
