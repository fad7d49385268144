// Trace context propagation without spans: what a process passes on to the services it calls when
// it builds no span for a request (tracing.ts and trace-sampling.ts use it).
//
// - Without an exporter (no tracer provider, nothing sampled): a caller's `traceparent` is joined
//   (joinCallers) and passed on, untouched, to the calls made while serving it (injectIntoUndici).
// - With an exporter, for a request the sampler turned down at the door (trace-sampling.ts): the
//   request runs with tracing suppressed, and its trace context, the caller's or a fresh unsampled
//   one, is still passed on (unsampledContext), so the services it calls keep the "not sampled"
//   decision instead of starting traces of their own.
//
// This module needs only the OpenTelemetry API and core: a process that exports nothing loads no
// SDK (tracing.ts).
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import {
  type Context,
  context,
  createContextKey,
  propagation,
  ROOT_CONTEXT,
  type SpanContext,
  trace,
} from "@opentelemetry/api";
import { suppressTracing } from "@opentelemetry/core";
import type { FastifyInstance } from "fastify";

/** The trace context an unsampled request passes on, kept apart from the (suppressed) active span. */
const PASS_ON = createContextKey("capstan.trace.pass-on");

/**
 * What PASS_ON holds: the caller's context (unsuppressed, with its baggage) and the span context
 * to pass on, then the headers they inject, made on the request's first outgoing call. With no
 * caller, `fresh` makes a new unsampled span context for each outgoing call instead.
 */
interface PassOn {
  caller: Context;
  spanContext?: SpanContext;
  headers?: Record<string, string>;
  fresh?: () => SpanContext;
}

/** Most requests carry no trace header: their context derives from this one, made once. */
const SUPPRESSED_ROOT = suppressTracing(ROOT_CONTEXT);

/**
 * The context of every unsampled request that came with no trace header, made once and shared
 * by all of them: a request left out by a 1 % sampler builds no context, no ids and no headers of
 * its own at the door. Each of its outgoing calls passes on a new unsampled span context from
 * `fresh`, so the services it calls still keep the "not sampled" decision; they just do not share
 * one trace id, which nothing records anyway.
 */
export function sharedUnsampledContext(fresh: () => SpanContext): Context {
  return SUPPRESSED_ROOT.setValue(PASS_ON, { caller: ROOT_CONTEXT, fresh } satisfies PassOn);
}

/** The headers the propagators write for a span context in a caller's context. */
function headersFor(caller: Context, spanContext: SpanContext): Record<string, string> {
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpanContext(caller, spanContext), headers);
  return headers;
}

/**
 * The context an unsampled request runs in: tracing suppressed and no active span (so neither
 * instrumentations nor the services' own spans build anything), the caller's baggage, and the
 * trace context to pass on (the caller's, else a fresh unsampled one).
 */
export function unsampledContext(parent: Context, passOn: SpanContext): Context {
  const base = parent === ROOT_CONTEXT ? SUPPRESSED_ROOT : suppressTracing(trace.deleteSpan(parent));
  return base.setValue(PASS_ON, { caller: parent, spanContext: passOn } satisfies PassOn);
}

/** The header fields of W3C's trace context and baggage propagators (OTEL_PROPAGATORS's default). */
const W3C_FIELDS = new Set(["traceparent", "tracestate", "baggage"]);

/** Whether the propagators' fields are W3C's (the global one is read once, when first needed). */
function w3cFieldsOnly(fields: string[]): boolean {
  return fields.includes("traceparent") && fields.every((f) => W3C_FIELDS.has(f.toLowerCase()));
}

/** The W3C `traceparent` of an unsampled span context (version 00, flags 00). */
function unsampledTraceparent(spanContext: SpanContext): string {
  return `00-${spanContext.traceId}-${spanContext.spanId}-00`;
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
  let writesTraceparentOnly: boolean | undefined;
  const onUndiciRequest = (message: unknown) => {
    const active = context.active();
    const span = trace.getSpan(active);
    if (span?.isRecording()) return;
    const { request } = message as { request: { addHeader(name: string, value: string): void } };
    let headers: Record<string, string>;
    if (span !== undefined && trace.isSpanContextValid(span.spanContext())) {
      headers = {};
      propagation.inject(active, headers);
    } else {
      const passOn = active.getValue(PASS_ON) as PassOn | undefined;
      if (!passOn) return;
      // The propagators write nothing for a context whose tracing is suppressed, so the headers
      // are made from the caller's context (its baggage) with the span context to pass on: a
      // caller's once per request, however many calls it makes; a new one for each call without.
      if (passOn.fresh) {
        const fresh = passOn.fresh();
        // A new unsampled trace has no tracestate and no baggage: W3C's propagators would write
        // its traceparent and nothing else, so it is written directly (no context, no carrier).
        writesTraceparentOnly ??= w3cFieldsOnly(propagation.fields());
        if (writesTraceparentOnly) {
          request.addHeader("traceparent", unsampledTraceparent(fresh));
          return;
        }
        headers = headersFor(ROOT_CONTEXT, fresh);
      } else headers = passOn.headers ??= headersFor(passOn.caller, passOn.spanContext as SpanContext);
    }
    for (const name in headers) request.addHeader(name, headers[name] as string);
  };
  subscribe("undici:request:create", onUndiciRequest);
  return () => unsubscribe("undici:request:create", onUndiciRequest);
}
