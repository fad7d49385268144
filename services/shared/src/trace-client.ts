// One CLIENT span per undici request (fetch included) made inside a recorded trace, from undici's
// diagnostics channels (trace-sdk.ts registers it when a process exports traces; the name `undici`
// in OTEL_NODE_DISABLED_INSTRUMENTATIONS / OTEL_NODE_ENABLED_INSTRUMENTATIONS leaves it out).
//
// Why not @opentelemetry/instrumentation-undici: a sampled request runs rarely (1 in 100 at the
// default ratio), and the code it runs is expensive out of all proportion when it runs that rarely
// (V8 keeps it in its lower tiers). The instrumentation parses every request's URL and headers,
// reads the socket and builds a duration metric per request; with it, a 1 % sampler cost the
// gateway 3-5 % more of its throughput than without it (bench/gateway/RESULTS.md). This module
// does what a trace shows and nothing else.
//
// The span follows the HTTP client semantic conventions, as the instrumentation's did: named after
// the method (`GET`, `POST`), child of the active span, with http.request.method, url.full,
// server.address, server.port and, when the answer's headers arrive, http.response.status_code
// (status ERROR and error.type for a 4xx/5xx); a request that fails gets error.type (the error's
// code, such as ECONNREFUSED, or name, such as TimeoutError) and the exception, and one its caller
// cancelled just ends. Its context is injected
// (`traceparent`), so the service called joins the trace under this span. Calls made outside a
// recorded trace get no span: trace-propagation.ts passes their context on.
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { context, propagation, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";

/** What undici publishes of a request (its public diagnostics-channel fields). */
interface UndiciRequest {
  origin: string | URL;
  path: string;
  method: string;
  addHeader(name: string, value: string): void;
}

/** Host and port of an origin (`http://search.ns:8080`), parsed once per origin. */
const origins = new Map<string, { host: string; port: number }>();
const MAX_ORIGINS = 256;

function serverOf(origin: string): { host: string; port: number } {
  let known = origins.get(origin);
  if (known === undefined) {
    const url = new URL(origin);
    known = { host: url.hostname, port: Number(url.port) || (url.protocol === "https:" ? 443 : 80) };
    if (origins.size >= MAX_ORIGINS) origins.clear();
    origins.set(origin, known);
  }
  return known;
}

const ADD_HEADER = { set: (request: UndiciRequest, name: string, value: string) => request.addHeader(name, value) };

/** Starts a client span per request made inside a recorded span; returns the undo. */
export function traceUndiciRequests(tracer: () => Tracer): () => void {
  const spans = new WeakMap<UndiciRequest, Span>();

  const onCreate = (message: unknown) => {
    const parent = context.active();
    if (trace.getSpan(parent)?.isRecording() !== true) return;
    const { request } = message as { request: UndiciRequest };
    // undici gives the origin as a string, or as a URL whose href would add a slash.
    const origin = typeof request.origin === "string" ? request.origin : request.origin.origin;
    const server = serverOf(origin);
    const span = tracer().startSpan(
      request.method,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          "http.request.method": request.method,
          "url.full": origin + request.path,
          "server.address": server.host,
          "server.port": server.port,
        },
      },
      parent,
    );
    propagation.inject(trace.setSpan(parent, span), request, ADD_HEADER);
    spans.set(request, span);
  };

  const onHeaders = (message: unknown) => {
    const { request, response } = message as { request: UndiciRequest; response: { statusCode: number } };
    const span = spans.get(request);
    if (span === undefined) return;
    span.setAttribute("http.response.status_code", response.statusCode);
    if (response.statusCode >= 400) {
      span.setAttribute("error.type", String(response.statusCode));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
  };

  const onDone = (message: unknown) => {
    const { request } = message as { request: UndiciRequest };
    const span = spans.get(request);
    if (span === undefined) return;
    spans.delete(request);
    span.end();
  };

  const onError = (message: unknown) => {
    const { request, error } = message as { request: UndiciRequest; error: Error & { code?: string | number } };
    const span = spans.get(request);
    if (span === undefined) return;
    spans.delete(request);
    // A call its caller cancelled is not an error of the call (HTTP semantic conventions).
    if (error.name !== "AbortError") {
      // A string code (ECONNREFUSED, UND_ERR_SOCKET) names the failure; a DOMException's code is
      // a number (a timeout's is 23), so its name (TimeoutError) does instead.
      span.setAttribute(
        "error.type",
        typeof error.code === "string" && error.code ? error.code : error.name || "Error",
      );
      span.recordException(error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    }
    span.end();
  };

  const channels: [string, (message: unknown) => void][] = [
    ["undici:request:create", onCreate],
    ["undici:request:headers", onHeaders],
    ["undici:request:trailers", onDone],
    ["undici:request:error", onError],
  ];
  for (const [name, fn] of channels) subscribe(name, fn);
  return () => {
    for (const [name, fn] of channels) unsubscribe(name, fn);
  };
}
