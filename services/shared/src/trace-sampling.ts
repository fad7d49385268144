// Head sampling at the door, and trace context propagation without spans (tracing.ts uses both).
//
// The OpenTelemetry SDK decides whether to sample a request's trace only when its first span is
// started, after the http instrumentation has already read the request's attributes, bound its
// events and made a (non-recording) span object; the undici and ioredis instrumentations then do
// the same for every call made while serving it. For an SRE to leave tracing on at a 1 % sampler,
// the other 99 % of requests must cost next to nothing. So the decision is taken first, at the
// door (the http instrumentation's ignoreIncomingRequestHook), with the configured sampler:
//
// - sampled: the request is traced as usual; the SDK's sampler (doorSampler) keeps the door's
//   decision for the server span instead of rolling the dice again;
// - not sampled: the instrumentation leaves the request alone (it runs with tracing suppressed,
//   so spans started meanwhile are no-ops), and only the trace context is passed on: the caller's
//   `traceparent` (unsampled), or for a request with none a fresh unsampled one, so the services it
//   calls keep the "not sampled" decision instead of starting traces of their own.
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
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";

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
  /** True when the request (its headers) starts or continues a sampled trace. */
  admits(headers: Record<string, unknown>): boolean;
  /** The SDK's sampler: the configured one, except that a root server span was admitted already. */
  sampler: Sampler;
}

export function door(configured: Sampler): Door {
  return {
    admits(headers) {
      const parent = propagation.extract(ROOT_CONTEXT, headers);
      // A root's trace id is not known yet (the SDK makes it); a random one serves for a ratio.
      const traceId = trace.getSpanContext(parent)?.traceId ?? ids.generateTraceId();
      const result = configured.shouldSample(parent, traceId, "", SpanKind.SERVER, {}, []);
      return result.decision === SamplingDecision.RECORD_AND_SAMPLED;
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

/** Adds an onRequest hook to every Fastify instance created from now on; returns the undo. */
export function onEveryFastify(
  hook: (req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void,
): () => void {
  const onInstance = (message: unknown) => {
    (message as { fastify: FastifyInstance }).fastify.addHook("onRequest", hook);
  };
  // Fastify publishes each new instance on this channel (what @fastify/otel registers itself by).
  subscribe("fastify.initialization", onInstance);
  return () => unsubscribe("fastify.initialization", onInstance);
}

/**
 * Trace context propagation without spans. Each Fastify request the http instrumentation does
 * not trace (none is registered, or the door turned it away) gets a context to pass on: the
 * caller's (`traceparent`, `tracestate`) when it sent one, else, when `freshUnsampled`, a new
 * unsampled one. undici/fetch calls made while serving it carry that context; calls inside a
 * recorded span are the undici instrumentation's. With `asActive`, the caller's span context is
 * also the active span (log lines carry its trace id; no SDK tracer is registered to mind).
 * Returns the function that stops it.
 */
export function passTraceContextOn(opts: { freshUnsampled: boolean; asActive: boolean }): () => void {
  const undoFastify = onEveryFastify((req, _reply, done) => {
    if (trace.getActiveSpan()?.isRecording()) return done();
    let passOn: SpanContext | undefined;
    if (req.headers.traceparent !== undefined) {
      const extracted = propagation.extract(ROOT_CONTEXT, req.headers);
      if (opts.asActive) return context.with(extracted, done);
      passOn = trace.getSpanContext(extracted);
    } else if (opts.freshUnsampled) {
      passOn = {
        traceId: ids.generateTraceId(),
        spanId: ids.generateSpanId(),
        traceFlags: TraceFlags.NONE,
        isRemote: true,
      };
    }
    // The rest of the request's hooks and its handler run inside done(), so in this context.
    if (passOn) context.with(context.active().setValue(PASS_ON, passOn), done);
    else done();
  });
  const onUndiciRequest = (message: unknown) => {
    const active = context.active();
    const span = trace.getSpan(active);
    if (span?.isRecording()) return;
    const valid = span && trace.isSpanContextValid(span.spanContext());
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
  return () => {
    undoFastify();
    unsubscribe("undici:request:create", onUndiciRequest);
  };
}
