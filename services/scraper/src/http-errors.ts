// Turns any error into the scraper's error shape {success: false, error, code} with the
// registry's status, for both HTTP services, through the shared installer (@capstan/shared,
// http-errors.ts). Unknown errors are logged and answered as 500 without their message (it may
// carry internals).
import { type ErrorShape, installErrorHandling, type Refusal } from "@capstan/shared";
import type { FastifyInstance, FastifyReply, FastifySchemaCompiler } from "fastify";
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

/**
 * Body validation by the route's zod schema (the API's routes and the rendering service's), failing
 * with BAD_REQUEST and the first issues by field ("url: must be a string"). A missing body reads
 * as {} so the message names the field.
 */
export const bodyValidator: FastifySchemaCompiler<z.ZodType> =
  ({ schema }) =>
  (data) => {
    const parsed = schema.safeParse(data ?? {});
    return parsed.success
      ? { value: parsed.data }
      : { error: new ScraperError("BAD_REQUEST", [zodMessage(parsed.error)]) };
  };

/** The scraper's error of a Fastify refusal or an unknown route. */
function refusalError(r: Refusal): ScraperError {
  switch (r.kind) {
    case "too_large":
      return new ScraperError("PAYLOAD_TOO_LARGE");
    case "media_type":
      return new ScraperError("MEDIA_TYPE", [r.got]);
    case "bad_json":
    case "bad_request":
      return new ScraperError("BAD_REQUEST", [r.detail]);
    case "method_not_allowed":
      return new ScraperError("METHOD_NOT_ALLOWED", [r.method, r.url, r.allow.join(" or ")]);
    case "not_found":
      // Firecrawl's paths this scraper does not serve are answered in Firecrawl's terms.
      return new ScraperError(/^\/v[12]\//.test(r.url) ? "FIRECRAWL_UNSUPPORTED" : "NOT_FOUND", [
        `${r.method} ${r.url}`,
      ]);
  }
}

const scraperErrorShape: ErrorShape<ScraperError> = {
  own: (err) => (isScraperError(err) ? err : undefined),
  refusal: refusalError,
  internal: () => new ScraperError("INTERNAL"),
  status: (e) => e.status,
  send: (reply, e) => sendError(reply, e),
};

export function installErrorHandlers(app: FastifyInstance): void {
  // JSON bodies only: Fastify would otherwise hand a text/plain body to the schema as a string.
  app.removeContentTypeParser("text/plain");
  installErrorHandling(app, scraperErrorShape);
}
