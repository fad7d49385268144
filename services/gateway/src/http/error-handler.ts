// Every error leaves the gateway in the OpenAI shape {"error":{message,type,param,code}}: our
// GatewayErrors as declared in errors.ts, Fastify's own (body too large → 413, bad JSON → 400,
// another content type → 415 naming the accepted one), a known path with the wrong method → 405
// with Allow, unknown routes → 404, and anything unexpected → 500 with no detail (it is logged).
// The shared installer (@capstan/shared, http-errors.ts) does the common part; this file says what
// each refusal is in the gateway's registry, and parses JSON bodies with a message that helps.
import { type ErrorShape, installErrorHandling, notFoundHandler, type Refusal } from "@capstan/shared";
import type { FastifyInstance, FastifyReply } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import sjson from "secure-json-parse";
import { paramOf } from "../chat-request.ts";
import { GatewayError } from "../errors.ts";

/** What secure-json-parse says of a body with a __proto__ or constructor.prototype key. */
const PROTO_KEY = /forbidden prototype property|constructor property/i;

/**
 * The JSON body parser (Fastify's own says only "Body is not valid JSON"): JSON.parse's own
 * message for bad JSON, and a __proto__ / constructor.prototype key (refused, as prototype
 * poisoning) named as such.
 */
function parseJson(body: string): unknown {
  if (body.length === 0) {
    throw new GatewayError("invalid_request", { detail: "The request body is empty; send a JSON object." });
  }
  try {
    return sjson.parse(body, { protoAction: "error", constructorAction: "error" });
  } catch (err) {
    if (PROTO_KEY.test((err as Error).message)) {
      throw new GatewayError("invalid_request", {
        detail:
          "The request body contains a '__proto__' or 'constructor.prototype' key, which is refused for safety; remove it.",
      });
    }
    throw new GatewayError("invalid_json", { detail: (err as Error).message });
  }
}

function mediaTypeError(got: string, body?: string): GatewayError {
  let hint = "";
  if (body !== undefined) {
    try {
      JSON.parse(body);
      hint = " The body is JSON: only the header is wrong (curl: add -H 'Content-Type: application/json').";
    } catch {}
  }
  return new GatewayError("unsupported_media_type", { got: got.slice(0, 100), hint });
}

/** The gateway's own error for `err`: a GatewayError, or a route schema's refusal. */
function ownError(err: unknown): GatewayError | undefined {
  if (err instanceof GatewayError) return err;
  // A route schema refused the request: 400 naming the first bad param (OpenAI's notation).
  if (hasZodFastifySchemaValidationErrors(err)) {
    const issue = err.validation[0];
    const path = (issue?.instancePath ?? "").split("/").filter(Boolean);
    return new GatewayError(
      "invalid_request",
      { detail: issue?.message ?? "bad request" },
      { param: paramOf(path.map((p) => (/^\d+$/.test(p) ? Number(p) : p))) },
    );
  }
  return undefined;
}

/** Fastify's refusals and unknown routes as the gateway's errors. */
function refusalError(r: Refusal): GatewayError {
  switch (r.kind) {
    case "too_large":
      return new GatewayError("request_too_large", { limit: r.limit });
    case "media_type":
      return mediaTypeError(r.got);
    case "bad_json":
      return new GatewayError("invalid_json", { detail: r.detail });
    case "bad_request":
      return new GatewayError("invalid_request", { detail: r.detail });
    case "method_not_allowed":
      return new GatewayError("method_not_allowed", { method: r.method, url: r.url, allow: r.allow.join(" or ") });
    case "not_found":
      return new GatewayError("not_found", { method: r.method, url: r.url });
  }
}

/** The gateway's error shape for the shared installer (@capstan/shared's http-errors.ts). */
export function gatewayErrorShape(bodyLimit: number): ErrorShape<GatewayError> {
  return {
    bodyLimit,
    own: ownError,
    refusal: refusalError,
    internal: () => new GatewayError("internal_error"),
    status: (e) => e.status,
    send: (reply, e) => sendError(reply, e),
  };
}

export function sendError(reply: FastifyReply, err: GatewayError): FastifyReply {
  reply.code(err.status);
  reply.header("x-should-retry", String(err.retry));
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply.type("application/json; charset=utf-8").send(err.toBody());
}

/**
 * The not-found handler of the context `app` (set on the root by installGatewayErrors, and again
 * inside the /api/v1 plugin, whose hooks, the request id among them, then run for its unknown paths).
 */
export function gatewayNotFound(app: FastifyInstance) {
  return notFoundHandler(app, gatewayErrorShape(0));
}

/** The gateway's JSON body parsers and every error and unknown route answered in the OpenAI shape. */
export function installGatewayErrors(app: FastifyInstance, bodyLimit: number): void {
  // JSON only (application/json, any charset). A body with no content type is read as JSON too
  // (the client said nothing else); any other type is a 415 naming the accepted one, and a
  // form-encoded body that is really JSON (curl -d without -H) is told so.
  const json = (body: string, done: (err: Error | null, value?: unknown) => void) => {
    try {
      done(null, parseJson(body));
    } catch (err) {
      done(err as Error, undefined);
    }
  };
  app.removeContentTypeParser(["application/json", "text/plain"]);
  app.addContentTypeParser("application/json", { parseAs: "string", bodyLimit }, (_req, body, done) =>
    json(String(body), done),
  );
  app.addContentTypeParser("*", { parseAs: "string", bodyLimit }, (req, body, done) => {
    const type = req.headers["content-type"];
    if (type === undefined || type.trim() === "") return json(String(body), done);
    done(mediaTypeError(type, String(body)), undefined);
  });

  installErrorHandling(app, gatewayErrorShape(bodyLimit));
}
