// Every error leaves the gateway in the OpenAI shape {"error":{message,type,param,code}}: our
// GatewayErrors as declared in errors.ts, Fastify's own (body too large → 413, bad JSON → 400),
// unknown routes → 404, and anything unexpected → 500 with no detail (it is logged instead).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { GatewayError } from "../errors.ts";

export function toGatewayError(err: unknown, bodyLimit: number): GatewayError | undefined {
  if (err instanceof GatewayError) return err;
  const e = err as FastifyError & { statusCode?: number };
  switch (e?.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new GatewayError("request_too_large", { limit: bodyLimit });
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new GatewayError("invalid_request", { detail: "The request body is empty; send a JSON object." });
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
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
  // Bodies with another (or no) content type are still parsed as JSON, so a bad body is a 400
  // naming the problem rather than a 415.
  app.removeContentTypeParser("text/plain");
  app.addContentTypeParser("*", { parseAs: "string", bodyLimit }, app.getDefaultJsonParser("error", "error"));

  app.setErrorHandler((err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const mapped = toGatewayError(err, bodyLimit);
    if (mapped) return sendError(reply, mapped);
    req.log.error({ err }, "unhandled error");
    return sendError(reply, new GatewayError("internal_error"));
  });

  app.setNotFoundHandler((req, reply) =>
    sendError(reply, new GatewayError("not_found", { method: req.method, url: req.url.split("?")[0] ?? "" })),
  );
}
