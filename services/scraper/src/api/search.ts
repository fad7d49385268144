// Web search through a SearXNG-compatible metasearch service (SEARCH_ENDPOINT, with
// SEARCH_ENGINES and SEARCH_CATEGORIES), optionally re-ranked by embedding similarity to the
// query (MODEL_EMBEDDING_NAME) when an LLM provider is configured.
import type { ScraperConfig } from "../config.ts";
import { ScraperError } from "../errors.ts";
import type { ApiMetrics } from "../metrics.ts";
import type { LlmClient } from "./llm.ts";
import { callJson } from "./outbound.ts";

export interface SearchResult {
  url: string;
  title: string;
  description: string;
  engine?: string;
}

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    dot += (a[i] as number) * (b[i] as number);
    na += (a[i] as number) ** 2;
    nb += (b[i] as number) ** 2;
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

export function searchEndpoint(endpoint: string): string {
  const url = new URL(endpoint);
  if (!url.pathname.endsWith("/search")) url.pathname = `${url.pathname.replace(/\/+$/, "")}/search`;
  return url.href;
}

export async function webSearch(
  config: ScraperConfig,
  metrics: ApiMetrics,
  llm: LlmClient,
  query: string,
  limit: number,
  signal?: AbortSignal,
): Promise<SearchResult[]> {
  if (!config.search.endpoint) throw new ScraperError("FEATURE_DISABLED", ["web search (SEARCH_ENDPOINT)"]);
  const url = new URL(searchEndpoint(config.search.endpoint));
  url.searchParams.set("q", query);
  url.searchParams.set("format", "json");
  if (config.search.engines.length) url.searchParams.set("engines", config.search.engines.join(","));
  if (config.search.categories.length) url.searchParams.set("categories", config.search.categories.join(","));
  const body = await callJson(metrics, {
    target: "search",
    url: url.href,
    timeoutMs: 15_000,
    retries: 2,
    ...(signal ? { signal } : {}),
  });
  const raw = (body as { results?: unknown }).results;
  if (!Array.isArray(raw)) throw new ScraperError("UPSTREAM_ERROR", ["search answered without results"]);
  const seen = new Set<string>();
  let results: SearchResult[] = [];
  for (const item of raw as Record<string, unknown>[]) {
    if (typeof item?.url !== "string" || !/^https?:\/\//i.test(item.url) || seen.has(item.url)) continue;
    seen.add(item.url);
    results.push({
      url: item.url,
      title: typeof item.title === "string" ? item.title : "",
      description: typeof item.content === "string" ? item.content : "",
      ...(typeof item.engine === "string" ? { engine: item.engine } : {}),
    });
  }
  if (llm.configured && results.length > 1) {
    const vectors = await llm.embed([query, ...results.map((r) => `${r.title}\n${r.description}`)], signal);
    const q = vectors[0] as number[];
    const scored = results.map((r, i) => ({ r, s: cosine(q, vectors[i + 1] as number[]) }));
    scored.sort((a, b) => b.s - a.s);
    results = scored.map((x) => x.r);
  }
  return results.slice(0, limit);
}
