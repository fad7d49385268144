// An external cross-encoder reranker speaking the TEI or Cohere /rerank shape:
//   TEI:    POST {url}/rerank {query, texts}            -> [{index, score}]
//   Cohere: POST {url}/rerank {model, query, documents} -> {results: [{index, relevance_score}]}
// Timeout, bounded retries on 429/5xx/network errors, outbound metrics. Scores outside 0..1
// (raw logits) are squashed with a sigmoid.
import type { OutboundMetrics } from "@capstan/shared";
import type { RerankCandidate, Reranker } from "./types.ts";

export interface ExternalRerankerOptions {
  url: string;
  style: "tei" | "cohere";
  model?: string | undefined;
  apiKey?: string | undefined;
  timeoutMs?: number;
  maxRetries?: number;
  metrics?: OutboundMetrics;
}

export class RerankerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RerankerError";
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const squash = (x: number) => (x >= 0 && x <= 1 ? x : 1 / (1 + Math.exp(-x)));

export class ExternalReranker implements Reranker {
  readonly name: string;
  private readonly opts: ExternalRerankerOptions;

  constructor(opts: ExternalRerankerOptions) {
    this.opts = opts;
    this.name = `external-${opts.style}`;
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

  private async post(body: unknown): Promise<unknown> {
    const url = `${this.opts.url.replace(/\/+$/, "")}/rerank`;
    const target = "rerank";
    const retries = this.opts.maxRetries ?? 2;
    let last: RerankerError | undefined;
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) {
        this.opts.metrics?.retries.inc({ target });
        await sleep(Math.min(1000, 50 * 2 ** attempt));
      }
      const started = performance.now();
      let res: Response;
      try {
        res = await fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {}),
          },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(this.opts.timeoutMs ?? 5000),
        });
      } catch (err) {
        this.opts.metrics?.calls.inc({ target, outcome: "error" });
        last = new RerankerError(`reranker unreachable: ${(err as Error).name}`);
        continue;
      }
      this.opts.metrics?.latency.observe({ target }, (performance.now() - started) / 1000);
      if (!res.ok) {
        await res.body?.cancel();
        this.opts.metrics?.calls.inc({ target, outcome: `http_${res.status}` });
        last = new RerankerError(`reranker answered ${res.status}`);
        if (res.status === 429 || res.status >= 500) continue;
        throw last;
      }
      try {
        const json = await res.json();
        this.opts.metrics?.calls.inc({ target, outcome: "ok" });
        return json;
      } catch {
        this.opts.metrics?.calls.inc({ target, outcome: "malformed" });
        throw new RerankerError("reranker returned invalid JSON");
      }
    }
    throw last ?? new RerankerError("reranker failed");
  }
}
