// The gateway's retrieval: the shared search client (services/shared/src/clients/search-client.ts)
// with the internal service token and the Agent's namespace per call (x-capstan-namespace: search
// checks the knowledge ids against that namespace's knowledge bases, as it checks a key's scope),
// the shared resilience policy (timeout per attempt, bounded full-jitter retries, Retry-After, a
// circuit breaker: search can be down), the W3C traceparent (undici instrumentation), and the outbound metrics
// (capstan_gateway_outbound_*{target="search"}). Any failure is a 502 knowledge_unavailable.
import {
  SearchApiError,
  SearchClient,
  type SearchQuery,
  type SearchResult,
} from "@capstan/shared/clients/search-client";
import { Agent as UndiciAgent } from "undici";
import { GatewayError } from "../errors.ts";
import type { GatewayMetrics } from "../metrics.ts";

export type { SearchResult };

/** A knowledge search as an Agent makes it: the search API's query, every field set, in its namespace. */
export interface RetrievalQuery extends Required<SearchQuery> {
  /** The Agent's namespace: search checks the ids against that namespace's knowledge bases. */
  namespace: string;
}

export interface Retriever {
  search(query: RetrievalQuery, signal: AbortSignal): Promise<SearchResult[]>;
}

export interface RetrievalOptions {
  url: string;
  internalToken: string | undefined;
  timeoutMs: number;
  maxRetries: number;
  metrics: GatewayMetrics;
}

/** Consecutive failing attempts that open the breaker, and how long it stays open before a trial. */
const BREAKER = { consecutiveFailures: 5, halfOpenAfterMs: 5_000 };

export class SearchServiceClient implements Retriever {
  private readonly dispatcher = new UndiciAgent({ connections: 64, keepAliveTimeout: 30_000 });
  private readonly client: SearchClient;

  constructor(opts: RetrievalOptions) {
    this.client = new SearchClient({
      baseURL: opts.url,
      token: opts.internalToken ?? "",
      timeoutMs: opts.timeoutMs,
      maxRetries: opts.maxRetries,
      metrics: opts.metrics.outbound,
      breaker: BREAKER,
      dispatcher: this.dispatcher,
    });
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }

  async search(query: RetrievalQuery, signal: AbortSignal): Promise<SearchResult[]> {
    const { namespace, ...body } = query;
    try {
      return await this.client.search(body, { namespace, signal });
    } catch (err) {
      const detail =
        err instanceof SearchApiError && err.status
          ? `search service answered ${err.status}: ${err.detail}`
          : `search service unreachable: ${err instanceof SearchApiError ? err.detail : (err as Error).message}`;
      throw new GatewayError("knowledge_unavailable", { detail });
    }
  }
}
