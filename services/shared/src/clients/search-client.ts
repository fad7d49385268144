// Typed HTTP client of the search service (owned by the search team), the only one in the
// repository: knowledge search (POST /v1/rag/search, /v1/rag/search/batch) for the gateway's
// retrieval, and the internal documents API for the operator's and the standalone launcher's
// ingestion. Every call goes through the shared resilience policy (timeout per attempt, bounded
// full-jitter retries on 429/5xx/timeouts/network errors, Retry-After, metrics; all operations are
// idempotent). Answers are checked against the wire schemas (search-wire.ts, documents-wire.ts). The token
// never appears in errors. The W3C traceparent is the undici instrumentation's (tracing.ts): one
// client span per attempt, each injecting its own.
import { type Dispatcher, fetch as undiciFetch } from "undici";
import type { z } from "zod";
import type { OutboundMetrics } from "../metrics.ts";
import { classifyFailure, type Failure, OutboundPolicy } from "../resilience/policy.ts";
import {
  type carryPageSchema,
  type DocumentInput,
  type DocumentList,
  type DocumentListQuery,
  documentsWire,
  type KnowledgeBaseInfo,
  type KnowledgeBaseRef,
  type KnowledgeBaseSettings,
  type PruneRequest,
  type PruneResult,
  type UploadList,
  type UpsertResult,
} from "./documents-wire.ts";
import {
  batchResponseSchema,
  type Envelope,
  type SearchQuery,
  type SearchResult,
  searchResponseSchema,
} from "./search-wire.ts";

export type {
  DocumentInput,
  DocumentListQuery,
  IngestedDocument,
  KnowledgeBaseInfo,
  KnowledgeBaseRef,
  KnowledgeBaseSettings,
  PruneRequest,
  PruneResult,
  UploadList,
  UpsertResult,
} from "./documents-wire.ts";

export type { SearchQuery, SearchResult } from "./search-wire.ts";
/** The same as SearchResult (the name the ingestion code grew up with). */
export type SearchHit = SearchResult;

/** What carryUploads did: uploads looked at, and those copied into the new vector set with their chunks. */
export type CarriedUploads = Pick<z.infer<typeof carryPageSchema>, "uploads" | "carried" | "chunks">;

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
  /** Ceiling of the first full-jitter backoff, doubled each retry, default 200 ms. */
  retryBaseMs?: number;
  metrics?: OutboundMetrics | undefined;
  /** A circuit breaker in front of search (the gateway's retrieval: search can be down). */
  breaker?: { consecutiveFailures: number; halfOpenAfterMs: number };
  /** A connection pool of the caller's (e.g. the gateway's); default: undici's global one. */
  dispatcher?: Dispatcher;
  fetch?: typeof fetch;
}

/** Per call: the namespace (overrides the client's) and the caller's abort signal. */
export interface SearchCallOptions {
  namespace?: string;
  signal?: AbortSignal;
}

/** A non-2xx answer (or an unreachable service); status 0 when there was no HTTP answer. */
export class SearchApiError extends Error {
  readonly status: number;
  /** Registry code from the x-capstan-error header, e.g. SEARCH_ERR_KNOWLEDGE_ID. */
  readonly code: string | undefined;
  readonly operation: string;
  /** What search said (its envelope's message), or why there was no answer. */
  readonly detail: string;
  /** The answer's Retry-After, honoured by the resilience policy. */
  readonly retryAfter: string | undefined;

  constructor(operation: string, status: number, message: string, code?: string, retryAfter?: string) {
    super(`search ${operation}: ${status ? `${status} ` : ""}${message}`);
    this.name = "SearchApiError";
    this.operation = operation;
    this.status = status;
    this.code = code;
    this.detail = message;
    this.retryAfter = retryAfter;
  }

  get retryable(): boolean {
    if (this.code === MALFORMED) return false;
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }
}

const MALFORMED = "SEARCH_CLIENT_MALFORMED";
const operationOf = (target: string) => target.replace(/^search_/, "");
/** Metric label: "search" for knowledge search (what the gateway calls), search_<op> for the rest. */
const metricTarget = (operation: string) => (operation === "search" ? "search" : `search_${operation}`);

/** How the resilience policy sees a failed attempt. */
function classify(err: unknown): Failure {
  if (!(err instanceof SearchApiError)) return classifyFailure(err);
  const outcome = err.code === MALFORMED ? "malformed" : err.status ? `http_${err.status}` : "error";
  return { retry: err.retryable, outcome, retryAfter: err.retryAfter };
}

interface CallExtras {
  timeoutMs?: number;
  /** Checks a 2xx answer's envelope (every call has its wire schema). */
  schema: z.ZodType<Envelope<unknown>>;
  call?: SearchCallOptions | undefined;
}

export class SearchClient {
  private readonly opts: SearchClientOptions;
  private readonly base: string;
  private readonly internalBase: string;
  private readonly policies = new Map<number, OutboundPolicy>();

  constructor(opts: SearchClientOptions) {
    this.opts = opts;
    this.base = opts.baseURL.replace(/\/+$/, "");
    this.internalBase = (opts.internalURL ?? opts.baseURL).replace(/\/+$/, "");
  }

  async search(query: SearchQuery, call?: SearchCallOptions): Promise<SearchResult[]> {
    const extras = { schema: searchResponseSchema, call };
    return (await this.call<SearchResult[]>("search", "POST", "/v1/rag/search", query, extras)) ?? [];
  }

  /** One entry per query, in order: its hits, or the error of that query alone. */
  async searchBatch(queries: SearchQuery[], call?: SearchCallOptions): Promise<(SearchResult[] | SearchApiError)[]> {
    const extras = { schema: batchResponseSchema, call };
    const path = "/v1/rag/search/batch";
    const items =
      (await this.call<Envelope<SearchResult[]>[]>("search_batch", "POST", path, { queries }, extras)) ?? [];
    return items.map((e) =>
      e.code === 200 && Array.isArray(e.data) ? e.data : new SearchApiError("search", e.code, e.message),
    );
  }

  /**
   * The public documents API with a search key: the documents uploaded to a knowledge base of the
   * key's namespace, and its counts (search's own, current, uploads included).
   */
  async listDocuments(knowledgeId: string, call?: SearchCallOptions): Promise<UploadList> {
    const path = `/v1/knowledge-bases/${encodeURIComponent(knowledgeId)}/documents`;
    return this.internal("list_documents", "GET", path, documentsWire.uploads, undefined, undefined, call);
  }

  /** Creates the knowledge base's collection (or updates its chunking); idempotent. */
  async ensureKnowledgeBase(kb: KnowledgeBaseRef, settings: KnowledgeBaseSettings = {}): Promise<KnowledgeBaseInfo> {
    return this.internal("ensure_kb", "PUT", this.kbPath(kb), documentsWire.info, settings);
  }

  /**
   * Makes the vector set being built (after a model change) serve, atomically; with model, only
   * if it is that model's. switched: false when it already serves (asked twice). 404 otherwise.
   */
  async switchKnowledgeBase(kb: KnowledgeBaseRef, model?: string) {
    const body = model ? { model } : {};
    return this.internal("switch_kb", "POST", `${this.kbPath(kb)}/switch`, documentsWire.switch, body);
  }

  /**
   * Before a switch: copies the uploads of the serving vector set that the one being built lacks
   * into it, their chunk texts embedded again with the new model; with model, only into that
   * model's. One call per page of uploads (each with the ingestion timeout and the retries of
   * every call: a page is idempotent), until the last. The totals of every page.
   */
  async carryUploads(kb: KnowledgeBaseRef, model?: string, pageSize = 16): Promise<CarriedUploads> {
    const total: CarriedUploads = { uploads: 0, carried: 0, chunks: 0 };
    let from: string | undefined;
    do {
      const body = { ...(model ? { model } : {}), ...(from ? { from } : {}), limit: pageSize };
      const path = `${this.kbPath(kb)}/carry-uploads`;
      const page = await this.internal("carry_uploads", "POST", path, documentsWire.carry, body, this.ingestTimeout);
      total.uploads += page.uploads;
      total.carried += page.carried;
      total.chunks += page.chunks;
      if (page.next !== undefined && page.next === from) {
        throw new SearchApiError("carry_uploads", 502, "the page did not advance", MALFORMED);
      }
      from = page.next;
    } while (from !== undefined);
    return total;
  }

  /** Counts, or undefined when the knowledge base has no collection. */
  async getKnowledgeBase(kb: KnowledgeBaseRef): Promise<KnowledgeBaseInfo | undefined> {
    try {
      return await this.internal("get_kb", "GET", this.kbPath(kb), documentsWire.info);
    } catch (err) {
      if (err instanceof SearchApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  /** Removes every vector of the knowledge base; idempotent. */
  async deleteKnowledgeBase(kb: KnowledgeBaseRef): Promise<{ deleted: boolean }> {
    return this.internal("delete_kb", "DELETE", this.kbPath(kb), documentsWire.deleteKnowledgeBase);
  }

  /** Chunks, embeds and replaces the document's chunks (nothing embedded when it is unchanged); idempotent. */
  async upsertDocument(kb: KnowledgeBaseRef, docsId: string, doc: DocumentInput): Promise<UpsertResult> {
    const path = this.docPath(kb, docsId);
    return this.internal("upsert_document", "PUT", path, documentsWire.upsert, doc, this.ingestTimeout);
  }

  async deleteDocument(kb: KnowledgeBaseRef, docsId: string): Promise<{ deleted: number }> {
    const path = this.docPath(kb, docsId);
    return this.internal("delete_document", "DELETE", path, documentsWire.deleteDocument);
  }

  /** One page of the documents ingested (of one source, with `source`), with their hashes and stamps. */
  async ingestedDocuments(kb: KnowledgeBaseRef, query: DocumentListQuery = {}): Promise<DocumentList> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    const path = `${this.kbPath(kb)}/documents${params.size ? `?${params}` : ""}`;
    return this.internal("list_ingested", "GET", path, documentsWire.list);
  }

  /** The end of a refresh: what its sources no longer have goes (see pruneBodySchema). */
  async pruneDocuments(kb: KnowledgeBaseRef, request: PruneRequest): Promise<PruneResult> {
    const path = `${this.kbPath(kb)}/prune`;
    return this.internal("prune_documents", "POST", path, documentsWire.prune, request, this.ingestTimeout);
  }

  private get ingestTimeout(): number {
    return this.opts.ingestTimeoutMs ?? 300_000;
  }

  /** A documents API call whose answer is checked against its wire schema (data null is malformed). */
  private async internal<T>(
    operation: string,
    method: string,
    path: string,
    schema: z.ZodType<Envelope<T>>,
    body?: unknown,
    timeoutMs?: number,
    call?: SearchCallOptions,
  ): Promise<T> {
    const data = await this.call<T>(operation, method, path, body, {
      schema: schema as z.ZodType<Envelope<unknown>>,
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      call,
    });
    if (data === null) throw new SearchApiError(operation, 502, "answer without data", MALFORMED);
    return data;
  }

  private kbPath(kb: KnowledgeBaseRef): string {
    const ns = encodeURIComponent(kb.namespace);
    return `/internal/v1/namespaces/${ns}/knowledge-bases/${encodeURIComponent(kb.knowledgeId)}`;
  }

  private docPath(kb: KnowledgeBaseRef, docsId: string): string {
    return `${this.kbPath(kb)}/documents/${encodeURIComponent(docsId)}`;
  }

  /** One policy per attempt timeout (the documents API's upserts get a longer one). */
  private policy(timeoutMs: number): OutboundPolicy {
    let p = this.policies.get(timeoutMs);
    if (!p) {
      p = new OutboundPolicy({
        target: "search",
        timeoutMs,
        maxAttempts: (this.opts.maxRetries ?? 2) + 1,
        baseDelayMs: this.opts.retryBaseMs ?? 200,
        metrics: this.opts.metrics,
        classify,
        ...(this.opts.breaker ? { breaker: this.opts.breaker } : {}),
        timeoutError: (ms, target) => new SearchApiError(operationOf(target), 0, `timed out after ${ms} ms`),
        circuitOpenError: (target) =>
          new SearchApiError(operationOf(target), 0, "not called: failing repeatedly, circuit open", "CIRCUIT_OPEN"),
      });
      this.policies.set(timeoutMs, p);
    }
    return p;
  }

  private async call<T>(
    operation: string,
    method: string,
    path: string,
    body: unknown,
    extras: CallExtras,
  ): Promise<T | null> {
    const doFetch = (this.opts.fetch ?? undiciFetch) as typeof fetch;
    const base = path.startsWith("/internal/") ? this.internalBase : this.base;
    const namespace = extras.call?.namespace ?? this.opts.namespace;
    const headers: Record<string, string> = {};
    if (this.opts.token) headers.authorization = `Bearer ${this.opts.token}`;
    if (namespace) headers["x-capstan-namespace"] = namespace;
    if (body !== undefined) headers["content-type"] = "application/json";
    const payload = body !== undefined ? JSON.stringify(body) : undefined;
    const dispatcher = this.opts.dispatcher ? { dispatcher: this.opts.dispatcher } : {};
    const attempt = async ({ signal }: { signal: AbortSignal }): Promise<T | null> => {
      let res: Response;
      try {
        res = await doFetch(`${base}${path}`, {
          method,
          headers,
          ...(payload !== undefined ? { body: payload } : {}),
          signal,
          ...dispatcher,
        });
      } catch (err) {
        if (extras.call?.signal?.aborted) throw err;
        throw new SearchApiError(operation, 0, `service unreachable (${(err as Error).name})`);
      }
      let envelope: Envelope<T> | undefined;
      try {
        envelope = (await res.json()) as Envelope<T>;
      } catch {
        envelope = undefined;
      }
      if (res.ok && envelope && typeof envelope === "object" && "data" in envelope) {
        const checked = extras.schema.safeParse(envelope);
        if (checked.success) return checked.data.data as T | null;
        const issue = checked.error.issues[0];
        const where = issue ? `: ${issue.path.join(".") || "answer"}: ${issue.message}` : "";
        throw new SearchApiError(operation, 502, `answer does not match the search API's schema${where}`, MALFORMED);
      }
      throw new SearchApiError(
        operation,
        res.status,
        envelope?.message ?? (res.ok ? "malformed response" : res.statusText),
        res.headers.get("x-capstan-error") ?? undefined,
        res.headers.get("retry-after") ?? undefined,
      );
    };
    const timeoutMs = extras.timeoutMs ?? this.opts.timeoutMs ?? 10_000;
    return this.policy(timeoutMs).execute(attempt, { target: metricTarget(operation), signal: extras.call?.signal });
  }
}
