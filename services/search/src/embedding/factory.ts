// The embedders a search process serves with: the local model always, plus an
// OpenAI-compatible provider when configured. Each sits behind a bounded query cache.
import type { Dispatcher } from "undici";
import type { SearchConfig } from "../config.ts";
import type { SearchMetrics } from "../metrics.ts";
import { LocalEmbedder } from "./local.ts";
import { locateModelFiles } from "./model-files.ts";
import { OpenAIEmbedder } from "./openai.ts";
import { CachedEmbedder, type Embedder } from "./provider.ts";

/** Counts cache hits and misses into the metrics. */
class MeteredCache extends CachedEmbedder {
  private readonly metrics: SearchMetrics | undefined;

  constructor(inner: Embedder, capacity: number, metrics?: SearchMetrics) {
    super(inner, capacity);
    this.metrics = metrics;
  }

  override async embed(texts: string[]): Promise<Float32Array[]> {
    const [h, m] = [this.hits, this.misses];
    const out = await super.embed(texts);
    this.metrics?.cache.inc({ result: "hit" }, this.hits - h);
    this.metrics?.cache.inc({ result: "miss" }, this.misses - m);
    return out;
  }
}

export async function loadLocalEmbedder(config: SearchConfig, metrics?: SearchMetrics): Promise<LocalEmbedder> {
  const files = locateModelFiles(config.embedding.modelDir);
  return LocalEmbedder.load({
    ...files,
    modelName: config.embedding.modelName,
    ...(config.embedding.threads ? { threads: config.embedding.threads } : {}),
    queryThreads: config.embedding.queryThreads,
    documentsIdleMs: config.embedding.documentsIdleSeconds * 1000,
    batchSize: config.embedding.batchSize,
    ...(config.embedding.maxTokens ? { maxTokens: config.embedding.maxTokens } : {}),
    ...(metrics
      ? {
          onBatch: (size: number, seconds: number) => {
            metrics.embedBatch.observe(size);
            metrics.embedRun.observe(seconds);
          },
        }
      : {}),
  });
}

export async function createEmbedders(
  config: SearchConfig,
  metrics?: SearchMetrics,
  /** The egress guard's dispatcher, for the remote provider. */
  dispatcher?: Dispatcher,
): Promise<Embedder[]> {
  const out: Embedder[] = [
    new MeteredCache(await loadLocalEmbedder(config, metrics), config.embedding.cacheSize, metrics),
  ];
  const openai = config.embedding.openai;
  if (openai) {
    const inner = new OpenAIEmbedder({
      ...openai,
      maxRetries: 2,
      ...(metrics ? { metrics: metrics.outbound } : {}),
      ...(dispatcher ? { dispatcher } : {}),
    });
    out.push(new MeteredCache(inner, config.embedding.cacheSize, metrics));
  }
  return out;
}
