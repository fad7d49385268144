// The gateway's client of the search service: POST {searchUrl}/v1/rag/search with the internal
// service token and the Agent's namespace (x-capstan-namespace: search checks the knowledge ids
// against that namespace's knowledge bases, as it checks a key's scope), a timeout per attempt, bounded retries with backoff on connect errors, timeouts,
// 429 and 5xx, the W3C traceparent, and a metric per call (gateway_outbound_*{target="search"}).
import { context, propagation } from "@opentelemetry/api";
import { Agent as Dispatcher, request } from "undici";
import { z } from "zod";
import { GatewayError } from "../errors.ts";
import type { GatewayMetrics } from "../metrics.ts";

export const searchResult = z
  .object({
    knowledgeId: z.string(),
    docsName: z.string().default(""),
    docsId: z.string().default(""),
    embeddingId: z.string().default(""),
    text: z.string(),
    score: z.number(),
    rerankedScore: z.number().nullable().optional(),
    source: z.string().default("vector"),
    metadata: z.object({ chunkIndex: z.number().optional(), totalChunks: z.number().optional() }).loose().optional(),
  })
  .loose();
export type SearchResult = z.infer<typeof searchResult>;

const envelope = z.object({
  code: z.number(),
  message: z.string().optional(),
  data: z.array(searchResult).nullable(),
});

export interface SearchQuery {
  /** The Agent's namespace: search checks the ids against that namespace's knowledge bases. */
  namespace: string;
  knowledgeIds: string[];
  text: string;
  maxResults: number;
  minSimilarity: number;
}

export interface Retriever {
  search(query: SearchQuery, signal: AbortSignal): Promise<SearchResult[]>;
}

export interface RetrievalOptions {
  url: string;
  internalToken: string | undefined;
  timeoutMs: number;
  maxRetries: number;
  metrics: GatewayMetrics;
}

const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

export class SearchServiceClient implements Retriever {
  private readonly opts: RetrievalOptions;
  private readonly dispatcher = new Dispatcher({ connections: 64, keepAliveTimeout: 30_000 });

  constructor(opts: RetrievalOptions) {
    this.opts = opts;
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }

  async search(query: SearchQuery, signal: AbortSignal): Promise<SearchResult[]> {
    const { metrics } = this.opts;
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.opts.internalToken) headers.authorization = `Bearer ${this.opts.internalToken}`;
    // The internal token reaches only the knowledge bases of the Agent's own namespace.
    headers["x-capstan-namespace"] = query.namespace;
    const { namespace: _ns, ...body } = query;
    propagation.inject(context.active(), headers);
    const url = `${this.opts.url.replace(/\/+$/, "")}/v1/rag/search`;
    let detail = "no attempt made";
    for (let attempt = 0; attempt <= this.opts.maxRetries; attempt++) {
      if (attempt > 0) {
        metrics.outbound.retries.inc({ target: "search" });
        await new Promise((r) => setTimeout(r, Math.min(2000, 100 * 2 ** attempt)));
        if (signal.aborted) break;
      }
      const started = performance.now();
      try {
        const res = await request(url, {
          method: "POST",
          headers,
          body: JSON.stringify(body),
          signal: AbortSignal.any([signal, AbortSignal.timeout(this.opts.timeoutMs)]),
          dispatcher: this.dispatcher,
          headersTimeout: this.opts.timeoutMs,
          bodyTimeout: this.opts.timeoutMs,
        });
        const text = await res.body.text();
        metrics.outbound.latency.observe({ target: "search" }, (performance.now() - started) / 1000);
        let parsed: z.infer<typeof envelope> | undefined;
        try {
          const result = envelope.safeParse(JSON.parse(text));
          if (result.success) parsed = result.data;
        } catch {
          parsed = undefined;
        }
        if (res.statusCode === 200 && parsed?.data) {
          metrics.outbound.calls.inc({ target: "search", outcome: "ok" });
          return parsed.data;
        }
        metrics.outbound.calls.inc({ target: "search", outcome: `http_${res.statusCode}` });
        detail = `search service answered ${res.statusCode}${parsed?.message ? `: ${parsed.message}` : ""}`;
        if (!RETRY_STATUSES.has(res.statusCode)) break;
      } catch (err) {
        metrics.outbound.calls.inc({ target: "search", outcome: "error" });
        detail = `search service unreachable: ${(err as Error).message}`;
        if (signal.aborted) break;
      }
    }
    throw new GatewayError("knowledge_unavailable", { detail });
  }
}
