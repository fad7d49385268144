// Turns any error into the scraper's error shape {success: false, error, code} with the
// registry's status, for both HTTP services. Unknown errors are logged and answered as 500
// without their message (it may carry internals).
import { allowedMethods, lingerOnRefusedBody } from "@capstan/shared";
import type { FastifyError, FastifyInstance, FastifyReply } from "fastify";
import type { z } from "zod";
import { isScraperError, ScraperError } from "./errors.ts";

export function sendError(reply: FastifyReply, err: ScraperError): FastifyReply {
  if (err.retryAfter !== undefined) reply.header("retry-after", String(err.retryAfter));
  return reply.code(err.status).send(err.toBody());
}

export function zodMessage(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join(".") : "body"}: ${i.message}`)
    .join("; ");
}

export function installErrorHandlers(app: FastifyInstance): void {
  // JSON bodies only: Fastify would otherwise hand a text/plain body to the schema as a string.
  app.removeContentTypeParser("text/plain");
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (isScraperError(err)) return sendError(reply, err);
    if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      lingerOnRefusedBody(req, reply);
      return sendError(reply, new ScraperError("PAYLOAD_TOO_LARGE"));
    }
    if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
      return sendError(
        reply,
        new ScraperError("MEDIA_TYPE", [String(req.headers["content-type"] ?? "").slice(0, 100)]),
      );
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return sendError(reply, new ScraperError("BAD_REQUEST", [err.message]));
    }
    req.log.error({ err }, "unhandled error");
    return sendError(reply, new ScraperError("INTERNAL"));
  });
  app.setNotFoundHandler((req, reply) => {
    const url = req.url.split("?")[0] ?? "";
    // Metrics and health are routes of the admin port's instance only: unknown here (404).
    const allow = allowedMethods(app, url);
    if (allow.length === 0) {
      const code = /^\/v[12]\//.test(url) ? "FIRECRAWL_UNSUPPORTED" : "NOT_FOUND";
      return sendError(reply, new ScraperError(code, [`${req.method} ${url}`]));
    }
    reply.header("allow", allow.join(", "));
    return sendError(reply, new ScraperError("METHOD_NOT_ALLOWED", [req.method, url, allow.join(" or ")]));
  });
}
