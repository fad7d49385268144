// Per-request context of the /api/v1 routes: the trace context, the authenticated channel, and
// the QPM decision. The server span and the W3C traceparent extraction come from the http
// instrumentation (services/shared/src/tracing.ts): this file only names the channel and the
// limiter's decision on that span. Each is an onRequest hook that the /api/v1 plugin (routes/api-v1.ts)
// adds to its own encapsulated context, so it runs for those routes only; auth and the limiter run
// before the body is read, so a rejected request costs little.
import { randomUUID } from "node:crypto";
import { type LimitDecision, rateLimitHeaders, retryAfterSeconds } from "@capstan/shared/limiter";
import { activeTraceContext } from "@capstan/shared/tracing";
import { type Context, context, INVALID_SPAN_CONTEXT, type Span, trace } from "@opentelemetry/api";
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import type { ChannelDirectory, ResolvedChannel } from "../channels.ts";
import { GatewayError } from "../errors.ts";
import type { QpmLimiter } from "../limiter/limiter.ts";
import type { GatewayMetrics } from "../metrics.ts";

declare module "fastify" {
  interface FastifyRequest {
    capstan?: { span: Span; ctx: Context; channel?: ResolvedChannel; limit?: LimitDecision };
  }
}

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** The span of a request outside any trace: setting attributes on it does nothing. */
const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Runs fn inside the request's trace context (so logs and child spans carry its trace id). */
export function inRequestContext<T>(req: FastifyRequest, fn: () => T): T {
  return req.capstan ? context.with(req.capstan.ctx, fn) : fn();
}

/** The request id and trace context of every request of the context `app` (an encapsulated plugin). */
export function installTracing(app: FastifyInstance): void {
  app.addHook("onRequest", async (req, reply) => {
    // A request id for the client to quote (OpenAI SDKs expose it as request_id): the caller's
    // x-request-id when it is sane, else a new one.
    const given = req.headers["x-request-id"];
    reply.header(
      "x-request-id",
      typeof given === "string" && SAFE_REQUEST_ID.test(given) ? given : `req_${randomUUID()}`,
    );
    // The http instrumentation's server span (a non-recording one for an unsampled request, none
    // when nothing exports), kept so the channel can be named on it once known.
    const ctx = activeTraceContext();
    req.capstan = { span: trace.getSpan(ctx) ?? NO_SPAN, ctx };
  });
}

export interface AuthOptions {
  channels: ChannelDirectory;
  metrics: GatewayMetrics;
  /** Clock for key expiry (ms since epoch). */
  now: () => number;
}

/** onRequest hook: the bearer key must belong to an unexpired AccessChannel. */
export function authenticate(gateway: AuthOptions): onRequestAsyncHookHandler {
  return async function authenticateChannel(req: FastifyRequest) {
    try {
      const channel = gateway.channels.authenticate(req.headers.authorization, gateway.now());
      if (req.capstan) req.capstan.channel = channel;
      req.capstan?.span.setAttribute("capstan.channel", channel.id);
    } catch (err) {
      if (err instanceof GatewayError) gateway.metrics.authFailures.inc({ reason: err.code });
      throw err;
    }
  };
}

/** onRequest hook (after authenticate): one limiter decision; 429 with Retry-After when spent. */
export function limitRate(gateway: { limiter: QpmLimiter; metrics: GatewayMetrics }): onRequestAsyncHookHandler {
  return async function limitChannelRate(req: FastifyRequest, reply: FastifyReply) {
    const channel = req.capstan?.channel;
    if (!channel) return;
    const decision = await gateway.limiter.check(channel.id, channel.qpm);
    req.capstan?.span.setAttributes({
      "capstan.limiter.backend": decision.backend,
      "capstan.limiter.allowed": decision.allowed,
    });
    if (req.capstan) req.capstan.limit = decision;
    const headers = rateLimitHeaders(decision);
    if (!decision.allowed) {
      gateway.metrics.limiterRejections.inc({
        channel: gateway.metrics.channelLabel.value(channel.id),
        backend: decision.backend,
      });
      throw new GatewayError(
        "rate_limit_exceeded",
        { limit: decision.limit, retryAfter: retryAfterSeconds(decision) },
        { headers },
      );
    }
    reply.headers(headers);
  };
}
