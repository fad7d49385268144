// An OpenAI-compatible POST {baseURL}/embeddings provider (OpenAI, vLLM, TEI, Ollama, LiteLLM).
// Timeout, bounded retries with backoff on 429/5xx/network errors, outbound metrics.
import type { OutboundMetrics } from "@capstan/shared";
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
}

export class EmbeddingProviderError extends Error {
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.name = "EmbeddingProviderError";
    this.status = status;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class OpenAIEmbedder implements Embedder {
  readonly name: string;
  readonly dimensions: number;
  private readonly opts: OpenAIEmbedderOptions;

  constructor(opts: OpenAIEmbedderOptions) {
    this.opts = opts;
    this.name = `openai:${opts.model}`;
    this.dimensions = opts.dimensions;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const size = this.opts.batchSize ?? 64;
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += size) out.push(...(await this.call(texts.slice(i, i + size))));
    return out;
  }

  private async call(input: string[]): Promise<Float32Array[]> {
    const url = `${this.opts.baseURL.replace(/\/+$/, "")}/embeddings`;
    const retries = this.opts.maxRetries ?? 2;
    const target = "embeddings";
    let lastError: EmbeddingProviderError | undefined;
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) {
        this.opts.metrics?.retries.inc({ target });
        await sleep(Math.min(2000, 100 * 2 ** attempt));
      }
      const started = performance.now();
      try {
        const res = await fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {}),
          },
          body: JSON.stringify({ model: this.opts.model, input }),
          signal: AbortSignal.timeout(this.opts.timeoutMs ?? 10_000),
        });
        this.opts.metrics?.latency.observe({ target }, (performance.now() - started) / 1000);
        if (!res.ok) {
          await res.body?.cancel();
          this.opts.metrics?.calls.inc({ target, outcome: `http_${res.status}` });
          lastError = new EmbeddingProviderError(`embeddings endpoint answered ${res.status}`, res.status);
          if (res.status === 429 || res.status >= 500) continue;
          throw lastError;
        }
        const body = (await res.json()) as { data?: { index?: number; embedding?: number[] }[] };
        const data = body.data;
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
        this.opts.metrics?.calls.inc({ target, outcome: "ok" });
        return out;
      } catch (err) {
        if (err instanceof EmbeddingProviderError && err.status === undefined) {
          this.opts.metrics?.calls.inc({ target, outcome: "malformed" });
          throw err;
        }
        if (err instanceof EmbeddingProviderError) throw err;
        this.opts.metrics?.calls.inc({ target, outcome: "error" });
        lastError = new EmbeddingProviderError(`embeddings endpoint unreachable: ${(err as Error).name}`);
      }
    }
    throw lastError ?? new EmbeddingProviderError("embeddings endpoint failed");
  }

  async close(): Promise<void> {}
}
