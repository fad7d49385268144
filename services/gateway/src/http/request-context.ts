// Per-request context of the /api/v1 routes: the server span (W3C traceparent of the caller
// extracted, so the gateway's spans join the caller's trace), the authenticated channel, and the
// QPM decision. Auth and the limiter run in onRequest, before the body is read, so a rejected
// request costs little.
import { randomUUID } from "node:crypto";
import { type LimitDecision, rateLimitHeaders, retryAfterSeconds } from "@capstan/shared/limiter";
import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import type { Gateway } from "../app.ts";
import type { ResolvedChannel } from "../channels.ts";
import { GatewayError } from "../errors.ts";
import { tracerOf } from "../tracer.ts";

declare module "fastify" {
  interface FastifyRequest {
    capstan?: { span: Span; ctx: Context; channel?: ResolvedChannel; limit?: LimitDecision };
  }
}

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export { tracerOf };

/** Runs fn inside the request's trace context (so logs and child spans carry its trace id). */
export function inRequestContext<T>(req: FastifyRequest, fn: () => T): T {
  return req.capstan ? context.with(req.capstan.ctx, fn) : fn();
}

function childSpan<T>(req: FastifyRequest, name: string, fn: (span: Span) => T): T {
  const parent = req.capstan?.ctx ?? context.active();
  const span = tracerOf().startSpan(name, {}, parent);
  try {
    return context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    span.end();
  }
}

export function installRequestContext(app: FastifyInstance, _gateway: Gateway): void {
  app.addHook("onRequest", async (req, reply) => {
    if (!req.url.startsWith("/api/")) return;
    // A request id for the client to quote (OpenAI SDKs expose it as request_id): the caller's
    // x-request-id when it is sane, else a new one.
    const given = req.headers["x-request-id"];
    reply.header(
      "x-request-id",
      typeof given === "string" && SAFE_REQUEST_ID.test(given) ? given : `req_${randomUUID()}`,
    );
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracerOf().startSpan(
      `${req.method} ${req.routeOptions.url ?? req.url}`,
      { kind: SpanKind.SERVER },
      parent,
    );
    span.setAttribute("http.request.method", req.method);
    req.capstan = { span, ctx: trace.setSpan(parent, span) };
  });
  app.addHook("onResponse", async (req, reply) => {
    const span = req.capstan?.span;
    if (!span) return;
    span.setAttribute("http.response.status_code", reply.statusCode);
    if (req.capstan?.channel) span.setAttribute("capstan.channel", req.capstan.channel.id);
    if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
}

/** onRequest hook: the bearer key must belong to an unexpired AccessChannel. */
export function authenticate(gateway: Gateway): onRequestAsyncHookHandler {
  return async (req: FastifyRequest) => {
    childSpan(req, "auth", (span) => {
      try {
        const channel = gateway.channels.authenticate(req.headers.authorization, gateway.now());
        if (req.capstan) req.capstan.channel = channel;
        span.setAttribute("capstan.channel", channel.id);
      } catch (err) {
        if (err instanceof GatewayError) gateway.metrics.authFailures.inc({ reason: err.code });
        throw err;
      }
    });
  };
}

/** onRequest hook (after authenticate): one limiter decision; 429 with Retry-After when spent. */
export function limitRate(gateway: Gateway): onRequestAsyncHookHandler {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const channel = req.capstan?.channel;
    if (!channel) return;
    const parent = req.capstan?.ctx ?? context.active();
    const span = tracerOf().startSpan("limiter", {}, parent);
    try {
      const decision = await gateway.limiter.check(channel.id, channel.qpm);
      span.setAttribute("capstan.limiter.backend", decision.backend);
      span.setAttribute("capstan.limiter.allowed", decision.allowed);
      if (req.capstan) req.capstan.limit = decision;
      const headers = rateLimitHeaders(decision);
      if (!decision.allowed) {
        gateway.metrics.limiterRejections.inc({ channel: channel.id, backend: decision.backend });
        throw new GatewayError(
          "rate_limit_exceeded",
          { limit: decision.limit, retryAfter: retryAfterSeconds(decision) },
          { headers },
        );
      }
      reply.headers(headers);
    } finally {
      span.end();
    }
  };
}
