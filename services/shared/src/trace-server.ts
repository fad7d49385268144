// One server span per Fastify request, made by the first onRequest hook of every Fastify instance
// (tracing.ts registers it when an exporter is set), after the sampling decision at the door
// (trace-sampling.ts). This replaces the http instrumentation's server side, whose cost for an
// untraced request (attributes read, request and response event emitters bound to a context)
// was most of what a 1 % sampler cost the gateway (bench/gateway/tracing.ts, docs/benchmarks.md):
// here an unsampled request costs the decision and one context, nothing more.
//
// The span follows the HTTP semantic conventions: named `<method> <route>`, kind SERVER, child
// of the caller's `traceparent`, with http.request.method, http.route, url.path, url.scheme,
// server.address, client.address, user_agent.original, network.protocol.version and, at the
// end, http.response.status_code (status ERROR and error.type for a 5xx, or a request the client
// abandoned). Hooks and handlers write what they learn onto it (the active span while they run).
import { context, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";
import type { FastifyReply, FastifyRequest } from "fastify";
import { type Door, onEveryFastify, unsampledContext } from "./trace-sampling.ts";

/** Probe and scrape paths: polled every few seconds, never worth a trace. */
const UNTRACED_PATHS = new Set(["/healthz", "/readyz", "/livez", "/metrics", "/health"]);

export function untraced(url: string | undefined): boolean {
  return UNTRACED_PATHS.has((url ?? "").split("?")[0] ?? "");
}

function attributesOf(req: FastifyRequest, route: string | undefined) {
  const headers = req.headers;
  return {
    "http.request.method": req.method,
    ...(route ? { "http.route": route } : {}),
    "url.path": (req.url ?? "").split("?")[0] ?? "",
    "url.scheme": req.protocol,
    ...(req.host ? { "server.address": req.hostname } : {}),
    "client.address": req.ip,
    ...(typeof headers["user-agent"] === "string" ? { "user_agent.original": headers["user-agent"] } : {}),
    "network.protocol.version": req.raw.httpVersion,
  };
}

function end(span: Span, status: number | undefined): void {
  if (status !== undefined) span.setAttribute("http.response.status_code", status);
  if (status === undefined || status >= 500) {
    span.setAttribute("error.type", status === undefined ? "aborted" : String(status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** Traces every Fastify instance created from now on; returns the undo. */
export function traceFastifyRequests(door: Door, tracer: () => Tracer): () => void {
  const spans = new WeakMap<FastifyRequest, Span>();
  const finish = (req: FastifyRequest, reply: FastifyReply | undefined) => {
    const span = spans.get(req);
    if (!span) return;
    spans.delete(req);
    end(span, reply?.statusCode);
  };
  return onEveryFastify((fastify) => {
    fastify.addHook("onRequest", (req, _reply, done) => {
      if (untraced(req.url)) return done();
      const { parent, sampled } = door.decide(req.headers);
      // The rest of the request's hooks and its handler run inside done(), so in this context.
      if (!sampled) return context.with(unsampledContext(parent), done);
      const route = req.routeOptions.url;
      const span = tracer().startSpan(
        route ? `${req.method} ${route}` : req.method,
        { kind: SpanKind.SERVER, attributes: attributesOf(req, route) },
        parent,
      );
      spans.set(req, span);
      context.with(trace.setSpan(parent, span), done);
    });
    fastify.addHook("onResponse", (req, reply, done) => {
      finish(req, reply);
      done();
    });
    fastify.addHook("onRequestAbort", (req, done) => {
      finish(req, undefined);
      done();
    });
  });
}
