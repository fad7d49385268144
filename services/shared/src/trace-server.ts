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
import type { FastifyRequest } from "fastify";
import { onEveryFastify } from "./trace-propagation.ts";
import type { Door } from "./trace-sampling.ts";

/** Probe and scrape paths: polled every few seconds, never worth a trace. */
const UNTRACED_PATHS = new Set(["/healthz", "/readyz", "/livez", "/metrics", "/health"]);

export function untraced(url: string | undefined = ""): boolean {
  const query = url.indexOf("?");
  return UNTRACED_PATHS.has(query < 0 ? url : url.slice(0, query));
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

/**
 * Traces every Fastify instance created from now on; returns the undo. One onRequest hook per
 * instance and nothing else: a sampled request's span ends on its response's `close` event
 * (after the last byte, or when the client abandoned it), so the 99 % of requests a small ratio
 * leaves out pay for no onResponse or onRequestAbort hook, whose mere presence costs every
 * request a hook run and a listener on its socket.
 */
export function traceFastifyRequests(door: Door, tracer: () => Tracer): () => void {
  return onEveryFastify((fastify) =>
    fastify.addHook("onRequest", (req, reply, done) => {
      if (untraced(req.url)) return done();
      const decision = door.decide(req.headers);
      // The rest of the request's hooks and its handler run inside done(), so in this context.
      if (!decision.sampled) return context.with(decision.context, done);
      const parent = decision.parent;
      const route = req.routeOptions.url;
      const span = tracer().startSpan(
        route ? `${req.method} ${route}` : req.method,
        { kind: SpanKind.SERVER, attributes: attributesOf(req, route) },
        parent,
      );
      const res = reply.raw;
      res.once("close", () => end(span, res.writableFinished ? res.statusCode : undefined));
      context.with(trace.setSpan(parent, span), done);
    }),
  );
}
