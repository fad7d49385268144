// Every error and unknown route of the console's API as {error: {code, message}} (never cached),
// through the shared installer (@capstan/shared, http-errors.ts): the console's registry
// (errors.ts), the API server's refusals in its own words, and Fastify's refusals. A request the
// route's wire schema refuses (wire.ts) is a 400 BadRequest naming each bad field.
import { type ErrorShape, frameworkRefusal, installErrorHandling, type Refusal } from "@capstan/shared";
import type { FastifyInstance } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import { ConsoleError, errors, toConsoleError } from "./errors.ts";

function refusalError(r: Refusal): ConsoleError {
  switch (r.kind) {
    case "too_large":
      return errors.tooLarge(r.limit);
    case "media_type":
      return new ConsoleError(415, "UnsupportedMediaType", `the console takes JSON, not ${r.got || "no content type"}`);
    case "bad_json":
    case "bad_request":
      return new ConsoleError(r.status, "BadRequest", r.detail);
    case "method_not_allowed":
      return new ConsoleError(
        405,
        "MethodNotAllowed",
        `${r.method} is not allowed on ${r.url}; use ${r.allow.join(" or ")}`,
      );
    case "not_found":
      return new ConsoleError(404, "NotFound", `no ${r.method} ${r.url} here`);
  }
}

/**
 * A request a route's schema refused, as 400 BadRequest: each issue as `where: what`, e.g.
 * `body.token: paste a token` or `querystring.hours: must be at least 1`.
 */
function schemaRefusal(err: unknown): ConsoleError | undefined {
  if (!hasZodFastifySchemaValidationErrors(err)) return undefined;
  const part = err.validationContext ?? "body";
  const issues = err.validation.map((issue) => {
    const path = (issue.instancePath ?? "").split("/").filter(Boolean);
    const where = [part, ...path].join(".");
    return `${where}: ${issue.message ?? "invalid"}`;
  });
  return new ConsoleError(400, "BadRequest", issues.join("; ") || "bad request");
}

export function installConsoleErrors(app: FastifyInstance): void {
  const shape: ErrorShape<ConsoleError> = {
    // What Fastify refused is the installer's to name; anything else is the console's own or the
    // API server's (toConsoleError keeps the API server's words).
    own: (err, req) => schemaRefusal(err) ?? (frameworkRefusal(err, req) ? undefined : toConsoleError(err)),
    refusal: refusalError,
    internal: () => new ConsoleError(500, "Internal", "internal error"),
    status: (e) => e.status,
    send: (reply, e, req) => {
      if (e.status >= 500)
        req.log.warn({ code: e.code, err: e.message, route: req.routeOptions.url }, "console request failed");
      return reply
        .code(e.status)
        .header("cache-control", "no-store")
        .send({ error: { code: e.code, message: e.message } });
    },
  };
  installErrorHandling(app, shape);
}
