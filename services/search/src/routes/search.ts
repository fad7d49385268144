// POST /v1/rag/search and POST /v1/rag/search/batch (reference 4.2, 2.6-2.8, 7.2), as one plugin
// registered at /v1/rag: the caller (key, validity, client address, QPM) is checked by an onRequest
// hook of this plugin's context, before the body is read; the route schemas validate the bodies
// (each batch query on its own) and serialise the envelopes, and are what /openapi.json publishes.
import { rateLimitHeaders, retryAfterSeconds, type WindowLimiter } from "@capstan/shared/limiter";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { type Caller, NAMESPACE_HEADER, type SearchKeyAuthenticator } from "../auth/search-keys.ts";
import type { SearchConfig } from "../config.ts";
import { type Envelope, errorEnvelope, ok, SearchError } from "../errors.ts";
import type { SearchMetrics } from "../metrics.ts";
import { batchRequestSchema, parseObject, searchRequestSchema, searchValidator } from "../schemas.ts";
import type { AuthorizedSearch, SearchEngine, SearchRequest, SearchResult } from "../search-engine.ts";
import { batchDoc, batchResponse, errorResponses, searchResponse } from "./search-schemas.ts";

export interface SearchRoutesOptions {
  /**
   * Who may call: SearchKeys (the public port) or the internal caller holding the internal token
   * (the internal port, where the gateway retrieves); each listener registers its own plugin.
   */
  callers: "keys" | "internal";
  limiter: WindowLimiter;
  config: SearchConfig;
  auth: SearchKeyAuthenticator;
  engine: SearchEngine;
  metrics: SearchMetrics;
}

declare module "fastify" {
  interface FastifyRequest {
    /** Who called /v1/rag (set by the plugin's onRequest hook). */
    searchCaller?: Caller;
  }
}

/**
 * The caller, authenticated and within its key's requests per minute (429 with Retry-After when
 * over: one Redis round trip shared by every replica). The internal caller (the gateway, limited
 * per channel there) is not limited here.
 */
export async function caller(
  d: Pick<SearchRoutesOptions, "auth" | "limiter" | "metrics" | "callers">,
  req: FastifyRequest,
): Promise<Caller> {
  if (d.callers === "internal")
    return d.auth.authenticateInternalCaller(req.headers.authorization, req.headers[NAMESPACE_HEADER]);
  // req.ip: the client address as Fastify's trustProxy (the configured trusted proxies) gives it.
  const who = d.auth.authenticate(req.headers.authorization, req.ip);
  if (who.kind !== "key") return who;
  const decision = await d.limiter.check(`${who.namespace}/${who.name}`, who.requestsPerMinute);
  if (!decision.allowed) {
    d.metrics.rateLimited.inc();
    throw new SearchError(
      "SEARCH_ERR_RATE_LIMITED",
      { limit: decision.limit, retryAfter: retryAfterSeconds(decision) },
      { headers: rateLimitHeaders(decision) },
    );
  }
  return who;
}

export const searchRoutes: FastifyPluginAsync<SearchRoutesOptions> = async (plain, options) => {
  // Fastify hands a plugin its registration options, `prefix` included.
  const { prefix: _prefix, ...d } = options as SearchRoutesOptions & { prefix?: string };
  const app = plain.withTypeProvider<ZodTypeProvider>();
  const single = searchRequestSchema(d.config.search);
  const batch = batchRequestSchema(d.config.search);
  // The internal port's search (the gateway's agents) takes the internal token, not a key.
  const security: Record<string, string[]>[] = [{ [d.callers === "internal" ? "internalToken" : "searchKey"]: [] }];

  // Bodies refused in search's envelope, naming the field (schemas.ts).
  app.setValidatorCompiler(searchValidator());
  app.addHook("onRequest", async (req) => {
    req.searchCaller = await caller(d, req);
  });
  app.addHook("onResponse", async (req, reply) => countSearchOutcome(d.metrics, req, reply));

  app.post(
    "/search",
    {
      schema: {
        operationId: "search",
        summary: "Semantic search over the listed knowledge bases",
        tags: ["search"],
        security,
        body: single,
        response: { 200: searchResponse, ...errorResponses(400, 401, 403, 413, 415, 429, 500, 503) },
      },
    },
    (req) => searchOne(d, req, req.body),
  );

  app.post(
    "/search/batch",
    {
      schema: {
        operationId: "searchBatch",
        summary: "Several searches in one call; each answers in its own envelope, in order",
        tags: ["search"],
        security,
        body: batchDoc(single, d.config.search.batchMaxQueries),
        response: { 200: batchResponse, ...errorResponses(400, 401, 403, 413, 415, 429, 500, 503) },
      },
      // Validated as a list only: each query is checked on its own in the handler, so a bad one
      // fails alone (the documented body above shows what each query must be).
      validatorCompiler: (route) => searchValidator()({ ...route, schema: batch }),
    },
    (req) => searchBatch(d, single, req, req.body.queries),
  );
};

/** Counts a single search by its outcome: ok, or the error code it answered (batches count per query). */
function countSearchOutcome(metrics: SearchMetrics, req: FastifyRequest, reply: FastifyReply) {
  if (req.routeOptions.url?.endsWith("/search") !== true) return;
  const code = reply.getHeader("x-capstan-error");
  const outcome = reply.statusCode < 400 ? "ok" : typeof code === "string" ? code : "internal";
  metrics.queries.inc({ endpoint: "search", outcome });
}

/** POST /search: one query, over the knowledge bases the caller may read. */
async function searchOne(d: SearchRoutesOptions, req: FastifyRequest, body: SearchRequest) {
  const who = req.searchCaller as Caller;
  const results = await d.engine.search(d.engine.checkAccess(who, body));
  req.log.debug(
    {
      caller: who.kind === "key" ? `${who.namespace}/${who.name}` : `internal:${who.namespace ?? "-"}`,
      kbs: body.knowledgeIds.length,
      results: results.length,
    },
    "search",
  );
  return ok(results);
}

/** POST /search/batch: each query validated and searched on its own, answered in its own envelope. */
async function searchBatch(d: SearchRoutesOptions, single: QuerySchema, req: FastifyRequest, queries: unknown[]) {
  const who = req.searchCaller as Caller;
  const items = checkQueries(d.engine, who, single, queries);
  const valid = items.filter((x): x is AuthorizedSearch => !(x instanceof SearchError));
  const answers = valid.length > 0 ? await d.engine.searchMany(valid) : [];
  return ok(envelopes(d.metrics, items, answers));
}

type QuerySchema = ReturnType<typeof searchRequestSchema>;

/** Each query validated and authorised on its own: a bad one becomes its own error, not the batch's. */
function checkQueries(
  engine: SearchEngine,
  who: Caller,
  single: QuerySchema,
  queries: unknown[],
): (AuthorizedSearch | SearchError)[] {
  return queries.map((q, i) => {
    try {
      return engine.checkAccess(who, parseObject(single, q, `queries[${i}]`));
    } catch (err) {
      if (err instanceof SearchError) return err;
      throw err;
    }
  });
}

/**
 * One envelope per query, in order: a refused query's error, else the next answer of the valid
 * ones (results or their own error); each counted by its outcome.
 */
function envelopes(
  metrics: SearchMetrics,
  items: (AuthorizedSearch | SearchError)[],
  answers: (SearchResult[] | SearchError)[],
): Envelope<SearchResult[]>[] {
  let k = 0;
  return items.map((item) => {
    const out = item instanceof SearchError ? item : answers[k++];
    if (out instanceof SearchError || out === undefined) {
      const err = out ?? new SearchError("SEARCH_ERR_INTERNAL");
      metrics.queries.inc({ endpoint: "batch", outcome: err.code });
      return errorEnvelope(err);
    }
    metrics.queries.inc({ endpoint: "batch", outcome: "ok" });
    return ok(out);
  });
}
