// POST /v1/rag/search and POST /v1/rag/search/batch (reference 4.2, 2.6-2.8, 7.2).
import { rateLimitHeaders, retryAfterSeconds, type WindowLimiter } from "@capstan/shared/limiter";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { NAMESPACE_HEADER, type SearchKeyAuthenticator } from "../auth/search-keys.ts";
import type { SearchConfig } from "../config.ts";
import { type Envelope, errorEnvelope, ok, SearchError } from "../errors.ts";
import type { SearchMetrics } from "../metrics.ts";
import { batchRequestSchema, parseBody, searchRequestSchema } from "../schemas.ts";
import type { SearchEngine, SearchRequest, SearchResult } from "../search-engine.ts";

export interface SearchRoutesDeps {
  limiter: WindowLimiter;
  config: SearchConfig;
  auth: SearchKeyAuthenticator;
  engine: SearchEngine;
  metrics: SearchMetrics;
}

/**
 * The caller, authenticated and within its key's requests per minute (429 with Retry-After when
 * over: one Redis round trip shared by every replica). The internal caller (the gateway, limited
 * per channel there) is not limited here.
 */
async function caller(d: SearchRoutesDeps, req: FastifyRequest) {
  const who = authenticate(d.auth, req);
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

function authenticate(auth: SearchKeyAuthenticator, req: FastifyRequest) {
  return auth.authenticate(req.headers.authorization, req.ip, req.headers[NAMESPACE_HEADER]);
}

export function registerSearchRoutes(app: FastifyInstance, d: SearchRoutesDeps): void {
  const single = searchRequestSchema(d.config.search);
  const batch = batchRequestSchema(d.config.search);

  app.post("/v1/rag/search", async (req) => {
    try {
      const who = await caller(d, req);
      const body: SearchRequest = parseBody(single, req.body);
      const results = await d.engine.search(d.engine.checkAccess(who, body));
      d.metrics.queries.inc({ endpoint: "search", outcome: "ok" });
      req.log.debug(
        {
          caller: who.kind === "key" ? `${who.namespace}/${who.name}` : `internal:${who.namespace ?? "-"}`,
          kbs: body.knowledgeIds.length,
          results: results.length,
        },
        "search",
      );
      return ok(results);
    } catch (err) {
      d.metrics.queries.inc({ endpoint: "search", outcome: err instanceof SearchError ? err.code : "internal" });
      throw err;
    }
  });

  app.post("/v1/rag/search/batch", async (req) => {
    const who = await caller(d, req);
    const { queries } = parseBody(batch, req.body);
    // Validate and authorise each query on its own: a bad one gets its own error envelope.
    const items: (SearchRequest | SearchError)[] = queries.map((q, i) => {
      try {
        return d.engine.checkAccess(who, parseBody(single, q, `queries[${i}]`) as SearchRequest);
      } catch (err) {
        if (err instanceof SearchError) return err;
        throw err;
      }
    });
    const valid = items.filter((x): x is SearchRequest => !(x instanceof SearchError));
    const answers = valid.length > 0 ? await d.engine.searchMany(valid) : [];
    let k = 0;
    const data: Envelope<SearchResult[]>[] = items.map((item) => {
      const out = item instanceof SearchError ? item : answers[k++];
      if (out instanceof SearchError || out === undefined) {
        const err = out ?? new SearchError("SEARCH_ERR_INTERNAL");
        d.metrics.queries.inc({ endpoint: "batch", outcome: err.code });
        return errorEnvelope(err);
      }
      d.metrics.queries.inc({ endpoint: "batch", outcome: "ok" });
      return ok(out);
    });
    return ok(data);
  });
}
