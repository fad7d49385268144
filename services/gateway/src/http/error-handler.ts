// Every error leaves the gateway in the OpenAI shape {"error":{message,type,param,code}}: our
// GatewayErrors as declared in errors.ts, Fastify's own (body too large → 413, bad JSON → 400,
// another content type → 415 naming the accepted one), a known path with the wrong method → 405
// with Allow, unknown routes → 404, and anything unexpected → 500 with no detail (it is logged).
import { allowedMethods, lingerOnRefusedBody } from "@capstan/shared";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
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

export function toGatewayError(err: unknown, bodyLimit: number): GatewayError | undefined {
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
  const e = err as FastifyError & { statusCode?: number };
  switch (e?.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new GatewayError("request_too_large", { limit: bodyLimit });
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new GatewayError("invalid_request", { detail: "The request body is empty; send a JSON object." });
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return mediaTypeError(String(e.message.match(/Unsupported Media Type: (.*)$/)?.[1] ?? "unknown"));
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new GatewayError("invalid_request", { detail: e.message });
    default:
      break;
  }
  if (err instanceof SyntaxError || e?.code === "FST_ERR_CTP_INVALID_JSON_BODY") {
    return new GatewayError("invalid_json", { detail: (err as Error).message });
  }
  if (typeof e?.statusCode === "number" && e.statusCode >= 400 && e.statusCode < 500) {
    if (e.statusCode === 413) return new GatewayError("request_too_large", { limit: bodyLimit });
    return new GatewayError("invalid_request", { detail: e.message || "bad request" });
  }
  return undefined;
}

export function sendError(reply: FastifyReply, err: GatewayError): FastifyReply {
  reply.code(err.status);
  reply.header("x-should-retry", String(err.retry));
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply.type("application/json; charset=utf-8").send(err.toBody());
}

export function installErrorHandling(app: FastifyInstance, bodyLimit: number): void {
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

  app.setErrorHandler((err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const mapped = toGatewayError(err, bodyLimit);
    if (mapped?.status === 413) lingerOnRefusedBody(req, reply);
    if (mapped) return sendError(reply, mapped);
    req.log.error({ err }, "unhandled error");
    return sendError(reply, new GatewayError("internal_error"));
  });

  app.setNotFoundHandler(notFound(app));
}

/**
 * The not-found handler of the context `app`: 405 with Allow for a known path and the wrong method,
 * else 404. Set on the root and again inside the /api/v1 plugin, whose hooks (the request id)
 * then run for the paths under its prefix that no route serves.
 */
export function notFound(app: FastifyInstance): (req: FastifyRequest, reply: FastifyReply) => FastifyReply {
  return (req, reply) => {
    const url = req.url.split("?")[0] ?? "";
    // Metrics and health are routes of the internal instance only: unknown here (404).
    const allow = allowedMethods(app, url);
    if (allow.length > 0) {
      reply.header("allow", allow.join(", "));
      return sendError(
        reply,
        new GatewayError("method_not_allowed", { method: req.method, url, allow: allow.join(" or ") }),
      );
    }
    return sendError(reply, new GatewayError("not_found", { method: req.method, url }));
  };
}
