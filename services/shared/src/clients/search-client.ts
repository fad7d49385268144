// Typed HTTP client of the search service (owned by the search team, issue 4): knowledge search
// (POST /v1/rag/search, /v1/rag/search/batch) and the internal documents API used by ingestion.
// Every call has a timeout, bounded retries with exponential backoff on 429/5xx/timeouts/network
// errors (all operations are idempotent), and metric hooks. The token never appears in errors.
import type { OutboundMetrics } from "../metrics.ts";

export interface SearchQuery {
  knowledgeIds: string[];
  text: string;
  maxResults?: number;
  minSimilarity?: number;
}

export interface SearchHit {
  knowledgeId: string;
  docsName: string;
  docsId: string;
  embeddingId: string;
  text: string;
  score: number;
  rerankedScore: number;
  source: string;
  metadata: {
    knowledgeId: string;
    docsId: string;
    docsName: string;
    chunkIndex: number;
    totalChunks: number;
    [key: string]: string | number;
  };
}

export interface KnowledgeBaseSettings {
  embedding?: { provider?: "local" | "openai"; model?: string; baseURL?: string; dimensions?: number };
  chunking?: { size?: number; overlap?: number };
}

export interface KnowledgeBaseInfo {
  knowledgeId: string;
  documents: number;
  chunks: number;
  model?: string;
  dimensions?: number;
  chunking?: { size: number; overlap: number };
  /** After a model change: the generation being built beside the serving one, and its counts so far. */
  building?: { model: string; dimensions: number; documents: number; chunks: number };
  /** Set by PUT (ensure): where the vectors live and how they are indexed. */
  collection?: string;
  vectors?: {
    backend: "embedded" | "qdrant";
    size: number;
    distance: string;
    hnsw: { m: number; payloadM?: number; efConstruct: number; efSearch: number };
  };
}

/** A knowledge base as the documents API addresses it: the same id in two namespaces is two. */
export interface KnowledgeBaseRef {
  namespace: string;
  knowledgeId: string;
}

export interface DocumentInput {
  docsName: string;
  text: string;
  metadata?: Record<string, string | number | boolean>;
}

/** What a metric hook hears about each attempt. */
export interface SearchCallInfo {
  operation: string;
  /** HTTP status, or "timeout" / "network". */
  outcome: number | "timeout" | "network";
  seconds: number;
  attempt: number;
}

export interface SearchClientOptions {
  /** The public port, for search: e.g. http://capstan-search (Service port 80 → 8081). */
  baseURL: string;
  /**
   * The internal port, for the documents API (e.g. http://capstan-search:8091); absent: baseURL.
   * Search answers the documents API on its internal port only.
   */
  internalURL?: string;
  /** A search key (search only) or the internal token (everything). */
  token: string;
  /**
   * With the internal token: the namespace whose knowledge bases a search reads (sent as
   * x-capstan-namespace; search checks the ids against that namespace like a key's scope).
   */
  namespace?: string;
  /** Per attempt, default 10 s; document upserts use ingestTimeoutMs. */
  timeoutMs?: number;
  /** Document upserts embed the whole document: default 300 s. */
  ingestTimeoutMs?: number;
  /** Retries after the first attempt, default 2. */
  maxRetries?: number;
  /** First backoff, doubled each retry (with jitter), default 200 ms. */
  retryBaseMs?: number;
  metrics?: OutboundMetrics;
  onCall?: (info: SearchCallInfo) => void;
  fetch?: typeof fetch;
}

/** A non-2xx answer (or an unreachable service); status 0 when there was no HTTP answer. */
export class SearchApiError extends Error {
  readonly status: number;
  /** Registry code from the x-capstan-error header, e.g. SEARCH_ERR_KNOWLEDGE_ID. */
  readonly code: string | undefined;
  readonly operation: string;

  constructor(operation: string, status: number, message: string, code?: string) {
    super(`search ${operation}: ${status ? `${status} ` : ""}${message}`);
    this.name = "SearchApiError";
    this.operation = operation;
    this.status = status;
    this.code = code;
  }

  get retryable(): boolean {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }
}

interface Envelope<T> {
  code: number;
  message: string;
  data: T | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class SearchClient {
  private readonly opts: SearchClientOptions;
  private readonly base: string;
  private readonly internalBase: string;

  constructor(opts: SearchClientOptions) {
    this.opts = opts;
    this.base = opts.baseURL.replace(/\/+$/, "");
    this.internalBase = (opts.internalURL ?? opts.baseURL).replace(/\/+$/, "");
  }

  async search(query: SearchQuery): Promise<SearchHit[]> {
    return (await this.call<SearchHit[]>("search", "POST", "/v1/rag/search", query)) ?? [];
  }

  /** One entry per query, in order: its hits, or the error of that query alone. */
  async searchBatch(queries: SearchQuery[]): Promise<(SearchHit[] | SearchApiError)[]> {
    const items =
      (await this.call<Envelope<SearchHit[]>[]>("search_batch", "POST", "/v1/rag/search/batch", { queries })) ?? [];
    return items.map((e) =>
      e.code === 200 && Array.isArray(e.data) ? e.data : new SearchApiError("search", e.code, e.message),
    );
  }

  /** Creates the knowledge base's collection (or updates its chunking); idempotent. */
  async ensureKnowledgeBase(
    knowledgeId: KnowledgeBaseRef,
    settings: KnowledgeBaseSettings = {},
  ): Promise<KnowledgeBaseInfo> {
    return this.call<KnowledgeBaseInfo>(
      "ensure_kb",
      "PUT",
      this.kbPath(knowledgeId),
      settings,
    ) as Promise<KnowledgeBaseInfo>;
  }

  /**
   * Makes the generation being built (after a model change) serve, atomically; with model, only
   * if it is that model's. switched: false when it already serves (asked twice). 404 otherwise.
   */
  async switchKnowledgeBase(
    knowledgeId: KnowledgeBaseRef,
    model?: string,
  ): Promise<{ knowledgeId: string; model: string; dimensions: number; switched: boolean }> {
    return this.call("switch_kb", "POST", `${this.kbPath(knowledgeId)}/switch`, model ? { model } : {}) as Promise<{
      knowledgeId: string;
      model: string;
      dimensions: number;
      switched: boolean;
    }>;
  }

  /** Counts, or undefined when the knowledge base has no collection. */
  async getKnowledgeBase(knowledgeId: KnowledgeBaseRef): Promise<KnowledgeBaseInfo | undefined> {
    try {
      return (await this.call<KnowledgeBaseInfo>("get_kb", "GET", this.kbPath(knowledgeId))) ?? undefined;
    } catch (err) {
      if (err instanceof SearchApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  /** Removes every vector of the knowledge base; idempotent. */
  async deleteKnowledgeBase(knowledgeId: KnowledgeBaseRef): Promise<{ deleted: boolean }> {
    return this.call<{ deleted: boolean }>("delete_kb", "DELETE", this.kbPath(knowledgeId)) as Promise<{
      deleted: boolean;
    }>;
  }

  /** Chunks, embeds and replaces the document's chunks; idempotent. */
  async upsertDocument(
    knowledgeId: KnowledgeBaseRef,
    docsId: string,
    doc: DocumentInput,
  ): Promise<{ docsId: string; chunks: number }> {
    return this.call<{ docsId: string; chunks: number }>(
      "upsert_document",
      "PUT",
      this.docPath(knowledgeId, docsId),
      doc,
      this.opts.ingestTimeoutMs ?? 300_000,
    ) as Promise<{ docsId: string; chunks: number }>;
  }

  async deleteDocument(knowledgeId: KnowledgeBaseRef, docsId: string): Promise<{ deleted: number }> {
    return this.call<{ deleted: number }>("delete_document", "DELETE", this.docPath(knowledgeId, docsId)) as Promise<{
      deleted: number;
    }>;
  }

  private kbPath(kb: KnowledgeBaseRef): string {
    const ns = encodeURIComponent(kb.namespace);
    return `/internal/v1/namespaces/${ns}/knowledge-bases/${encodeURIComponent(kb.knowledgeId)}`;
  }

  private docPath(knowledgeId: KnowledgeBaseRef, docsId: string): string {
    return `${this.kbPath(knowledgeId)}/documents/${encodeURIComponent(docsId)}`;
  }

  private async call<T>(
    operation: string,
    method: string,
    path: string,
    body?: unknown,
    timeoutMs = this.opts.timeoutMs ?? 10_000,
  ): Promise<T | null> {
    const doFetch = this.opts.fetch ?? fetch;
    const retries = this.opts.maxRetries ?? 2;
    const m = this.opts.metrics;
    const target = `search_${operation}`;
    let last: SearchApiError | undefined;
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) {
        m?.retries.inc({ target });
        const base = (this.opts.retryBaseMs ?? 200) * 2 ** (attempt - 1);
        await sleep(base / 2 + Math.random() * base);
      }
      const started = performance.now();
      const report = (outcome: SearchCallInfo["outcome"]) => {
        const seconds = (performance.now() - started) / 1000;
        m?.latency.observe({ target }, seconds);
        m?.calls.inc({ target, outcome: typeof outcome === "number" ? `http_${outcome}` : outcome });
        this.opts.onCall?.({ operation, outcome, seconds, attempt });
      };
      let res: Response;
      try {
        const base = path.startsWith("/internal/") ? this.internalBase : this.base;
        res = await doFetch(`${base}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${this.opts.token}`,
            ...(this.opts.namespace ? { "x-capstan-namespace": this.opts.namespace } : {}),
            ...(body !== undefined ? { "content-type": "application/json" } : {}),
          },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (err) {
        const timeout = (err as Error).name === "TimeoutError" || (err as Error).name === "AbortError";
        report(timeout ? "timeout" : "network");
        last = new SearchApiError(operation, 0, timeout ? `timed out after ${timeoutMs} ms` : "service unreachable");
        continue;
      }
      let envelope: Envelope<T> | undefined;
      try {
        envelope = (await res.json()) as Envelope<T>;
      } catch {
        envelope = undefined;
      }
      report(res.status);
      if (res.ok && envelope && typeof envelope === "object" && "data" in envelope) return envelope.data;
      last = new SearchApiError(
        operation,
        res.status,
        envelope?.message ?? (res.ok ? "malformed response" : res.statusText),
        res.headers.get("x-capstan-error") ?? undefined,
      );
      if (!last.retryable) throw last;
    }
    throw last ?? new SearchApiError(operation, 0, "failed");
  }
}
