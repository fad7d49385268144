// An external cross-encoder reranker speaking the TEI or Cohere /rerank shape:
//   TEI:    POST {url}/rerank {query, texts}            -> [{index, score}]
//   Cohere: POST {url}/rerank {model, query, documents} -> {results: [{index, relevance_score}]}
// Calls go through the shared resilience policy (timeout per attempt, bounded full-jitter retries
// on 429/5xx/timeouts/network errors, Retry-After, outbound metrics). Scores outside 0..1 (raw
// logits) are squashed with a sigmoid. Connections go through the platform's egress guard when the
// app gives its dispatcher (a refused address is not retried).
import type { OutboundMetrics } from "@capstan/shared";
import { egressRefusal } from "@capstan/shared/egress";
import { type Failure, isRetryableStatus, OutboundPolicy } from "@capstan/shared/resilience";
import { type Dispatcher, fetch, type Response } from "undici";
import type { RerankCandidate, Reranker } from "./types.ts";

export interface ExternalRerankerOptions {
  url: string;
  style: "tei" | "cohere";
  model?: string | undefined;
  apiKey?: string | undefined;
  timeoutMs?: number;
  maxRetries?: number;
  metrics?: OutboundMetrics;
  /** The egress guard's dispatcher (EgressGuard.agent()); default undici's global one. */
  dispatcher?: Dispatcher;
}

export class RerankerError extends Error {
  /** The answer's status; undefined when there was none or it was unreadable. */
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly retryAfter: string | undefined;
  constructor(message: string, opts: { status?: number; retryable?: boolean; retryAfter?: string | null } = {}) {
    super(message);
    this.name = "RerankerError";
    this.status = opts.status;
    this.retryable = opts.retryable ?? false;
    this.retryAfter = opts.retryAfter ?? undefined;
  }
}

function classify(err: unknown): Failure {
  const e = err as RerankerError;
  const outcome = e.status ? `http_${e.status}` : e.retryable ? "error" : "malformed";
  return { retry: e.retryable === true, outcome, retryAfter: e.retryAfter };
}
const squash = (x: number) => (x >= 0 && x <= 1 ? x : 1 / (1 + Math.exp(-x)));

export class ExternalReranker implements Reranker {
  readonly name: string;
  private readonly opts: ExternalRerankerOptions;
  private readonly policy: OutboundPolicy;

  constructor(opts: ExternalRerankerOptions) {
    this.opts = opts;
    this.name = `external-${opts.style}`;
    this.policy = new OutboundPolicy({
      target: "rerank",
      timeoutMs: opts.timeoutMs ?? 5000,
      maxAttempts: (opts.maxRetries ?? 2) + 1,
      baseDelayMs: 100,
      maxDelayMs: 1_000,
      classify,
      metrics: opts.metrics,
      timeoutError: (ms) => new RerankerError(`reranker timed out after ${ms} ms`, { retryable: true }),
    });
  }

  async rerank(query: string, candidates: RerankCandidate[]): Promise<number[]> {
    if (candidates.length === 0) return [];
    const texts = candidates.map((c) => c.text);
    const body =
      this.opts.style === "tei"
        ? { query, texts, raw_scores: false }
        : { model: this.opts.model, query, documents: texts, top_n: texts.length };
    const json = await this.post(body);
    const items: { index?: unknown; score?: unknown; relevance_score?: unknown }[] = Array.isArray(json)
      ? json
      : ((json as { results?: [] })?.results ?? []);
    const out = new Array<number>(candidates.length).fill(0);
    let seen = 0;
    for (const item of items) {
      const idx = item.index;
      const score = item.score ?? item.relevance_score;
      if (typeof idx !== "number" || typeof score !== "number" || idx < 0 || idx >= out.length) {
        throw new RerankerError("reranker returned a malformed body");
      }
      out[idx] = squash(score);
      seen++;
    }
    if (seen !== candidates.length) throw new RerankerError("reranker did not score every candidate");
    return out;
  }

  private post(body: unknown): Promise<unknown> {
    const url = `${this.opts.url.replace(/\/+$/, "")}/rerank`;
    return this.policy.execute(async ({ signal }) => {
      let res: Response;
      try {
        res = await fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {}),
          },
          body: JSON.stringify(body),
          signal,
          ...(this.opts.dispatcher ? { dispatcher: this.opts.dispatcher } : {}),
        });
      } catch (err) {
        const refusal = egressRefusal(err);
        if (refusal) throw new RerankerError(`reranker ${refusal.message}`, { retryable: false });
        throw new RerankerError(`reranker unreachable: ${(err as Error).name}`, { retryable: true });
      }
      if (!res.ok) {
        await res.body?.cancel();
        const retryable = isRetryableStatus(res.status);
        const retryAfter = res.headers.get("retry-after");
        throw new RerankerError(`reranker answered ${res.status}`, { status: res.status, retryable, retryAfter });
      }
      try {
        return (await res.json()) as unknown;
      } catch {
        throw new RerankerError("reranker returned invalid JSON");
      }
    });
  }
}
