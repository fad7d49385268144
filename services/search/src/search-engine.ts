// The search flow of reference 4.2: embed the query, vector similarity across every listed
// knowledge base, drop hits under minSimilarity, rerank, return at most maxResults. Batches
// embed all their query texts in one model call per embedder and query the store in one call.
import { type Logger, tracer, withSpan } from "@capstan/shared";
import type { SearchResult, searchQuerySchema } from "@capstan/shared/clients/search-wire";
import type { z } from "zod";
import type { Caller } from "./auth/search-keys.ts";
import type { Embedder } from "./embedding/provider.ts";
import { SearchError } from "./errors.ts";
import type { KnowledgeBases } from "./knowledge-bases.ts";
import type { SearchMetrics } from "./metrics.ts";
import type { Reranker } from "./rerank/types.ts";
import { plainKnowledgeId, type VectorHit, type VectorQuery, type VectorStore } from "./store/types.ts";

/** One search as the client sent it (knowledge ids kb_...), validated by its wire schema, defaults filled. */
export type SearchRequest = z.output<ReturnType<typeof searchQuerySchema>>;

/** A search the caller may run: its knowledge ids resolved to the store keys of its namespace (checkAccess). */
export type AuthorizedSearch = Omit<SearchRequest, "knowledgeIds"> & { keys: string[] };

/** The wire shape of one result (reference 2.8), defined once in the shared search wire schemas. */
export type { SearchResult };

export interface SearchEngineDeps {
  kbs: KnowledgeBases;
  embedders: Map<string, Embedder>;
  store: VectorStore;
  reranker: Reranker;
  /** Used when the reranker (an external one) fails. */
  fallbackReranker: Reranker;
  metrics: SearchMetrics;
  logger: Logger;
  candidateFactor: number;
  minCandidates: number;
}

const round = (x: number) => Math.round(x * 1e6) / 1e6;
const t = tracer("capstan-search");

interface Plan {
  req: AuthorizedSearch;
  /** Store keys of the knowledge bases with a collection, by the embedder that filled them. */
  groups: Map<string, string[]>;
}

export class SearchEngine {
  private readonly d: SearchEngineDeps;

  constructor(deps: SearchEngineDeps) {
    this.d = deps;
  }

  /**
   * The request with its knowledge ids resolved to store keys of the caller's namespace; 400 for
   * the first one that is outside the key's scope or has no KnowledgeBase in that namespace (one
   * message for both, naming only the id the caller sent, so nothing about other namespaces or
   * scopes leaks). The internal caller is scoped to the namespace it names (its Agent's).
   */
  checkAccess(caller: Caller, req: SearchRequest): AuthorizedSearch {
    const keys = req.knowledgeIds.map((id) => {
      const inScope = caller.kind === "internal" || (caller.knowledgeIds.has(id) && caller.permissions.has("read"));
      const key = inScope && caller.namespace !== undefined ? this.d.kbs.keyOf(caller.namespace, id) : undefined;
      if (!key) throw new SearchError("SEARCH_ERR_KNOWLEDGE_ID", { knowledgeId: id });
      return key;
    });
    const { knowledgeIds: _ids, ...rest } = req;
    return { ...rest, keys };
  }

  private async plan(req: AuthorizedSearch): Promise<Plan> {
    const groups = new Map<string, string[]>();
    for (const key of new Set(req.keys)) {
      const info = await this.d.kbs.collection(key);
      if (!info) continue; // exists but nothing ingested yet: no hits
      const list = groups.get(info.model);
      if (list) list.push(key);
      else groups.set(info.model, [key]);
    }
    for (const model of groups.keys()) {
      if (!this.d.embedders.has(model)) {
        throw new SearchError("SEARCH_ERR_EMBEDDING", { detail: `model ${model} is not configured` });
      }
    }
    return { req, groups };
  }

  async search(req: AuthorizedSearch): Promise<SearchResult[]> {
    const [out] = await this.searchMany([req]);
    if (out instanceof Error) throw out;
    return out ?? [];
  }

  /** One result list or error per request, in order; one request's error does not fail the others. */
  async searchMany(reqs: AuthorizedSearch[]): Promise<(SearchResult[] | SearchError)[]> {
    const plans = await Promise.all(
      reqs.map((r) => this.plan(r).catch((err: unknown) => (err instanceof SearchError ? err : Promise.reject(err)))),
    );
    const embedded = await this.embedQueries(plans);
    const { queries, owners, results } = vectorQueries(plans, embedded, this.d);
    const hitsBy = await this.queryVectors(queries, owners);
    await this.rerankAll(plans, hitsBy, results);
    return results;
  }

  /** Embeds the distinct texts of each embedder in one call; an embedder that fails is an error of its model. */
  private async embedQueries(plans: (Plan | SearchError)[]): Promise<Embedded> {
    const embedded: Embedded = { vectors: new Map(), errors: new Map() };
    await withSpan(t, "search.embed", async (span) => {
      const started = performance.now();
      const textsBy = textsByModel(plans);
      span.setAttribute(
        "search.texts",
        [...textsBy.values()].reduce((s, x) => s + x.size, 0),
      );
      await Promise.all(
        [...textsBy].map(async ([model, set]) => {
          const texts = [...set];
          try {
            const vs = await (this.d.embedders.get(model) as Embedder).embed(texts);
            embedded.vectors.set(model, new Map(texts.map((x, i) => [x, vs[i] as Float32Array])));
          } catch (err) {
            this.d.logger.error({ err: (err as Error).message, model }, "query embedding failed");
            embedded.errors.set(model, new SearchError("SEARCH_ERR_EMBEDDING", { detail: (err as Error).message }));
          }
        }),
      );
      if (textsBy.size > 0) this.d.metrics.stage.observe({ stage: "embed" }, (performance.now() - started) / 1000);
    });
    return embedded;
  }

  /** Runs every vector query in one store call; the hits by the index of the request that owns them. */
  private async queryVectors(queries: VectorQuery[], owners: number[]): Promise<Map<number, VectorHit[]>> {
    const hitsBy = new Map<number, VectorHit[]>();
    if (queries.length === 0) return hitsBy;
    const lists = await withSpan(t, "search.vector", async (span) => {
      span.setAttribute("search.queries", queries.length);
      const started = performance.now();
      try {
        return await this.d.store.queryBatch(queries);
      } catch (err) {
        this.d.logger.error({ err: (err as Error).message }, "vector query failed");
        throw new SearchError("SEARCH_ERR_STORE", { detail: "query failed" }, { cause: err });
      } finally {
        this.d.metrics.stage.observe({ stage: "vector" }, (performance.now() - started) / 1000);
      }
    });
    lists.forEach((hits, k) => {
      const owner = owners[k] as number;
      hitsBy.set(owner, [...(hitsBy.get(owner) ?? []), ...hits]);
    });
    return hitsBy;
  }

  /** Reranks each request's candidates into its results (those not already an error). */
  private async rerankAll(
    plans: (Plan | SearchError)[],
    hitsBy: Map<number, VectorHit[]>,
    results: (SearchResult[] | SearchError)[],
  ): Promise<void> {
    await withSpan(t, "search.rerank", async () => {
      const started = performance.now();
      await Promise.all(
        plans.map(async (p, i) => {
          if (p instanceof SearchError || results[i] instanceof SearchError) return;
          const hits = hitsBy.get(i) ?? [];
          results[i] = await this.rerank(p.req, hits);
          this.d.metrics.results.observe((results[i] as SearchResult[]).length);
        }),
      );
      this.d.metrics.stage.observe({ stage: "rerank" }, (performance.now() - started) / 1000);
    });
  }

  /** Orders the candidates by rerankedScore and keeps maxResults. */
  private async rerank(req: AuthorizedSearch, hits: VectorHit[]): Promise<SearchResult[]> {
    if (hits.length === 0) return [];
    const candidates = hits.map((h) => ({ text: h.record.text, score: h.score }));
    let reranked: number[];
    try {
      reranked = await this.d.reranker.rerank(req.text, candidates);
    } catch (err) {
      this.d.metrics.rerankFallbacks.inc();
      this.d.logger.warn({ err: (err as Error).message }, "reranker failed; using the hybrid reranker");
      reranked = await this.d.fallbackReranker.rerank(req.text, candidates);
    }
    return hits
      .map((h, i) => ({ h, r: reranked[i] ?? 0 }))
      .sort((a, b) => b.r - a.r || b.h.score - a.h.score)
      .slice(0, req.maxResults)
      .map(({ h, r }) => toResult(h, r));
  }
}

/** The query vectors by model and text, and the models whose embedding failed. */
interface Embedded {
  vectors: Map<string, Map<string, Float32Array>>;
  errors: Map<string, SearchError>;
}

/** The distinct query texts each embedder has to embed. */
function textsByModel(plans: (Plan | SearchError)[]): Map<string, Set<string>> {
  const textsBy = new Map<string, Set<string>>();
  for (const p of plans) {
    if (p instanceof SearchError) continue;
    for (const model of p.groups.keys()) {
      const set = textsBy.get(model) ?? new Set<string>();
      set.add(p.req.text);
      textsBy.set(model, set);
    }
  }
  return textsBy;
}

/**
 * One vector query per (request, embedder group) pair, with the index of the request that owns
 * it; the results start empty, or as the request's error (its plan's, or its model's embedding).
 */
function vectorQueries(
  plans: (Plan | SearchError)[],
  embedded: Embedded,
  sizing: Pick<SearchEngineDeps, "candidateFactor" | "minCandidates">,
) {
  const queries: VectorQuery[] = [];
  const owners: number[] = [];
  const results: (SearchResult[] | SearchError)[] = plans.map((p) => (p instanceof SearchError ? p : []));
  plans.forEach((p, i) => {
    if (p instanceof SearchError) return;
    for (const [model, keys] of p.groups) {
      const err = embedded.errors.get(model);
      if (err) {
        results[i] = err;
        return;
      }
      const limit = Math.max(p.req.maxResults * sizing.candidateFactor, sizing.minCandidates);
      queries.push({
        keys,
        // The vector set of this model, even if a switch happens while the text is embedded.
        model,
        vector: embedded.vectors.get(model)?.get(p.req.text) as Float32Array,
        limit,
        minScore: p.req.minSimilarity,
      });
      owners.push(i);
    }
  });
  return { queries, owners, results };
}

function toResult(hit: VectorHit, reranked: number): SearchResult {
  const r = hit.record;
  const knowledgeId = plainKnowledgeId(r.knowledgeId);
  return {
    knowledgeId,
    docsName: r.docsName,
    docsId: r.docsId,
    embeddingId: r.embeddingId,
    text: r.text,
    score: round(hit.score),
    rerankedScore: round(reranked),
    source: "vector",
    metadata: {
      ...(r.extra ?? {}),
      knowledgeId,
      docsId: r.docsId,
      docsName: r.docsName,
      chunkIndex: r.chunkIndex,
      totalChunks: r.totalChunks,
    },
  };
}
