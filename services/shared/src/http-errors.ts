// The one error installer of every Capstan HTTP app. Fastify refuses some requests itself (a body
// over the limit, a content type no parser takes, unparsable JSON, a bad Content-Length) and knows
// when no route matches (404) or only the method is wrong (405); each package answers all of them
// in its own documented shape from its own error registry. This module does the part they share:
// it names each refusal once (frameworkRefusal, a pure function), keeps the connection of a
// refused body open while the rest is read (linger.ts), sets `Allow` on a 405, logs what nobody
// expected, and calls the package's ErrorShape for everything the package decides: which errors
// are its own, the registry entry of each refusal, its 500, and the wire shape.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { allowedMethods } from "./http.ts";
import { lingerOnRefusedBody } from "./linger.ts";

/** A request Fastify refused, or no route took: what a package maps into its own registry. */
export type Refusal =
  | { kind: "too_large"; status: 413; limit: number }
  | { kind: "media_type"; status: 415; got: string }
  | { kind: "bad_json"; status: 400; detail: string }
  | { kind: "bad_request"; status: number; detail: string }
  | { kind: "method_not_allowed"; status: 405; method: string; url: string; allow: string[] }
  | { kind: "not_found"; status: 404; method: string; url: string };

/** How one package answers errors: its own registry and wire shape. */
export interface ErrorShape<E> {
  /** The package's error for `err` when it is one (its registry's, or one it translates itself). */
  own(err: unknown, req: FastifyRequest): E | undefined;
  /** The package's error for a refusal. */
  refusal(refusal: Refusal, req: FastifyRequest): E;
  /** The package's 500, without detail (the error itself is logged). */
  internal(): E;
  /** The HTTP status of one of the package's errors (a 413 keeps the connection open while the rest is read). */
  status(e: E): number;
  /** Writes the error in the package's wire shape. */
  send(reply: FastifyReply, e: E, req: FastifyRequest): FastifyReply;
  /** The body limit a 413 names, when the package sets its own parsers' limit. */
  bodyLimit?: number;
}

/** The refusal behind a Fastify error (or a JSON SyntaxError), undefined for anything else. */
export function frameworkRefusal(
  err: unknown,
  req: Pick<FastifyRequest, "headers" | "routeOptions" | "server">,
  bodyLimit?: number,
): Refusal | undefined {
  const e = err as Partial<FastifyError> | null;
  switch (e?.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return {
        kind: "too_large",
        status: 413,
        limit: bodyLimit ?? req.routeOptions?.bodyLimit ?? req.server?.initialConfig.bodyLimit ?? 0,
      };
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return { kind: "media_type", status: 415, got: String(req.headers["content-type"] ?? "").slice(0, 100) };
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return { kind: "bad_json", status: 400, detail: e.message ?? "the body is not valid JSON" };
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return { kind: "bad_json", status: 400, detail: "the request body is empty; send a JSON object" };
    default:
      break;
  }
  if (err instanceof SyntaxError) return { kind: "bad_json", status: 400, detail: err.message };
  const status = e?.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500 && typeof e?.code === "string") {
    if (status === 413) return frameworkRefusal({ code: "FST_ERR_CTP_BODY_TOO_LARGE" }, req, bodyLimit);
    return { kind: "bad_request", status, detail: e.message || "bad request" };
  }
  return undefined;
}

/** Answers `err` in the package's shape: its own error, a refusal, or (logged) its 500. */
function answer<E>(shape: ErrorShape<E>, err: unknown, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const own = shape.own(err, req);
  const refusal = own === undefined ? frameworkRefusal(err, req, shape.bodyLimit) : undefined;
  let e: E;
  if (own !== undefined) e = own;
  else if (refusal) e = shape.refusal(refusal, req);
  else {
    req.log.error({ err }, "unhandled error");
    e = shape.internal();
  }
  if (shape.status(e) === 413) lingerOnRefusedBody(req, reply);
  return shape.send(reply, e, req);
}

/**
 * The not-found handler of the context `app` (the app, or a plugin whose hooks should run for its
 * prefix's unknown paths): 405 with `Allow` for a known path and the wrong method, else 404.
 */
export function notFoundHandler<E>(
  app: FastifyInstance,
  shape: ErrorShape<E>,
): (req: FastifyRequest, reply: FastifyReply) => FastifyReply {
  return (req, reply) => {
    const url = req.url.split("?")[0] ?? "";
    // Each listener knows its own routes only: the internal port's paths are unknown here (404).
    const allow = allowedMethods(app, url);
    if (allow.length > 0) {
      reply.header("allow", allow.join(", "));
      return shape.send(
        reply,
        shape.refusal({ kind: "method_not_allowed", status: 405, method: req.method, url, allow }, req),
        req,
      );
    }
    return shape.send(reply, shape.refusal({ kind: "not_found", status: 404, method: req.method, url }, req), req);
  };
}

/** Every error and unknown route of `app` answered in the package's shape. */
export function installErrorHandling<E>(app: FastifyInstance, shape: ErrorShape<E>): void {
  app.setErrorHandler((err: unknown, req: FastifyRequest, reply: FastifyReply) => answer(shape, err, req, reply));
  app.setNotFoundHandler(notFoundHandler(app, shape));
}
