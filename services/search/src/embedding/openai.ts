// An OpenAI-compatible POST {baseURL}/embeddings provider (OpenAI, vLLM, TEI, Ollama, LiteLLM).
// Calls go through the shared resilience policy: timeout per attempt, bounded full-jitter retries
// on 429/5xx/timeouts/network errors (Retry-After honoured), outbound metrics; connections through
// the platform's egress guard when the app gives its dispatcher (a refused address is not retried).
import type { OutboundMetrics } from "@capstan/shared";
import { egressRefusal } from "@capstan/shared/egress";
import { type Failure, isRetryableProviderStatus, OutboundPolicy } from "@capstan/shared/resilience";
import { type Dispatcher, fetch, type Response } from "undici";
import { type Embedder, normalize } from "./provider.ts";

export interface OpenAIEmbedderOptions {
  baseURL: string;
  model: string;
  apiKey?: string | undefined;
  dimensions: number;
  timeoutMs?: number;
  maxRetries?: number;
  batchSize?: number;
  metrics?: OutboundMetrics;
  /** The egress guard's dispatcher (EgressGuard.agent()); default undici's global one. */
  dispatcher?: Dispatcher;
}

export class EmbeddingProviderError extends Error {
  readonly status: number | undefined;
  /** Worth another attempt: unreachable, timed out, or isRetryableProviderStatus (not a malformed answer). */
  readonly retryable: boolean;
  readonly retryAfter: string | undefined;
  constructor(message: string, status?: number, opts: { retryable?: boolean; retryAfter?: string } = {}) {
    super(message);
    this.name = "EmbeddingProviderError";
    this.status = status;
    this.retryable = opts.retryable ?? (status !== undefined && isRetryableProviderStatus(status));
    this.retryAfter = opts.retryAfter;
  }
}

function classify(err: unknown): Failure {
  const e = err as EmbeddingProviderError;
  const outcome = e.status ? `http_${e.status}` : e.retryable ? "error" : "malformed";
  return { retry: e.retryable === true, outcome, retryAfter: e.retryAfter };
}

export class OpenAIEmbedder implements Embedder {
  readonly name: string;
  readonly dimensions: number;
  private readonly opts: OpenAIEmbedderOptions;
  private readonly policy: OutboundPolicy;

  constructor(opts: OpenAIEmbedderOptions) {
    this.opts = opts;
    this.name = `openai:${opts.model}`;
    this.dimensions = opts.dimensions;
    this.policy = new OutboundPolicy({
      target: "embeddings",
      timeoutMs: opts.timeoutMs ?? 10_000,
      maxAttempts: (opts.maxRetries ?? 2) + 1,
      baseDelayMs: 200,
      maxDelayMs: 2_000,
      classify,
      metrics: opts.metrics,
      timeoutError: (ms) =>
        new EmbeddingProviderError(`embeddings endpoint timed out after ${ms} ms`, undefined, { retryable: true }),
    });
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const size = this.opts.batchSize ?? 64;
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += size) out.push(...(await this.call(texts.slice(i, i + size))));
    return out;
  }

  private call(input: string[]): Promise<Float32Array[]> {
    return this.policy.execute(({ signal }) => this.once(input, signal));
  }

  private async once(input: string[], signal: AbortSignal): Promise<Float32Array[]> {
    const url = `${this.opts.baseURL.replace(/\/+$/, "")}/embeddings`;
    let res: Response;
    try {
      res = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: this.opts.model, input }),
        signal,
        ...(this.opts.dispatcher ? { dispatcher: this.opts.dispatcher } : {}),
      });
    } catch (err) {
      const refusal = egressRefusal(err);
      if (refusal)
        throw new EmbeddingProviderError(`embeddings endpoint ${refusal.message}`, undefined, { retryable: false });
      throw new EmbeddingProviderError(`embeddings endpoint unreachable: ${(err as Error).name}`, undefined, {
        retryable: true,
      });
    }
    if (!res.ok) {
      await res.body?.cancel();
      const retryAfter = res.headers.get("retry-after") ?? undefined;
      throw new EmbeddingProviderError(`embeddings endpoint answered ${res.status}`, res.status, {
        ...(retryAfter ? { retryAfter } : {}),
      });
    }
    const body = (await res.json().catch(() => undefined)) as
      | { data?: { index?: number; embedding?: number[] }[] }
      | undefined;
    const data = body?.data;
    if (!Array.isArray(data) || data.length !== input.length) {
      throw new EmbeddingProviderError("embeddings endpoint returned a malformed body");
    }
    const out = new Array<Float32Array>(input.length);
    data.forEach((d, i) => {
      const idx = typeof d.index === "number" ? d.index : i;
      if (!Array.isArray(d.embedding) || d.embedding.length !== this.dimensions) {
        throw new EmbeddingProviderError(
          `embedding has ${d.embedding?.length ?? 0} dimensions, expected ${this.dimensions}`,
        );
      }
      out[idx] = normalize(Float32Array.from(d.embedding));
    });
    return out;
  }

  async close(): Promise<void> {}
}
