// Every error and unknown route of one of search's listeners in the {code, message, data}
// envelope, through the shared installer (@capstan/shared, http-errors.ts): search's own errors,
// the vector store's failures (503, whichever call met them), and Fastify's refusals, each counted
// in capstan_search_errors_total by code and named in the x-capstan-error header.
import { type ErrorShape, installErrorHandling, type Refusal } from "@capstan/shared";
import type { FastifyInstance } from "fastify";
import { errorEnvelope, SearchError } from "./errors.ts";
import type { SearchMetrics } from "./metrics.ts";
import { StoreError } from "./store/types.ts";

function refusalError(r: Refusal): SearchError {
  switch (r.kind) {
    case "too_large":
      return new SearchError("SEARCH_ERR_BODY_TOO_LARGE", { limit: r.limit });
    case "media_type":
      return new SearchError("SEARCH_ERR_MEDIA_TYPE", { got: r.got });
    case "bad_json":
      return new SearchError("SEARCH_ERR_BODY_INVALID", { detail: "body: not valid JSON" });
    case "bad_request":
      return new SearchError("SEARCH_ERR_BODY_INVALID", { detail: r.detail });
    case "method_not_allowed":
      return new SearchError("SEARCH_ERR_METHOD", { method: r.method, url: r.url, allow: r.allow.join(" or ") });
    case "not_found":
      return new SearchError("SEARCH_ERR_NOT_FOUND", { detail: `${r.method} ${r.url}` });
  }
}

export function installSearchErrors(app: FastifyInstance, metrics: SearchMetrics): void {
  // JSON only: Fastify would otherwise hand a text/plain body to the schema as a string (a 400).
  app.removeContentTypeParser("text/plain");
  const shape: ErrorShape<SearchError> = {
    own: (err) => {
      if (err instanceof SearchError) return err;
      if (err instanceof StoreError) return new SearchError("SEARCH_ERR_STORE", { detail: err.message });
      return undefined;
    },
    refusal: refusalError,
    internal: () => new SearchError("SEARCH_ERR_INTERNAL"),
    status: (e) => e.status,
    send: (reply, e) => {
      metrics.errors.inc({ code: e.code });
      return reply.code(e.status).headers(e.headers).header("x-capstan-error", e.code).send(errorEnvelope(e));
    },
  };
  installErrorHandling(app, shape);
}
