// LLM-assisted extraction (Firecrawl's extractorOptions.mode "llm-extraction") and query
// embeddings for search ranking, through an OpenAI-compatible provider: LOCAL_MODEL_BASE_URL
// when set (no key needed), else LLM_BASE_URL with LLM_API_KEY. MODEL_NAME answers,
// MODEL_EMBEDDING_NAME embeds.
import type { ScraperConfig } from "../config.ts";
import { ScraperError } from "../errors.ts";
import type { ApiMetrics } from "../metrics.ts";
import { callJson } from "./outbound.ts";

const MAX_INPUT_CHARS = 48_000;

export interface LlmClient {
  readonly configured: boolean;
  extract(
    input: { markdown: string; prompt?: string | undefined; schema?: unknown },
    signal: AbortSignal,
  ): Promise<unknown>;
  embed(texts: string[], signal?: AbortSignal): Promise<number[][]>;
}

export function llmClient(config: ScraperConfig, metrics: ApiMetrics): LlmClient {
  const base = (config.llm.localModelBaseURL ?? config.llm.baseURL).replace(/\/+$/, "");
  const configured = Boolean(config.llm.localModelBaseURL || config.llm.apiKey);
  const headers: Record<string, string> =
    config.llm.apiKey && !config.llm.localModelBaseURL ? { authorization: `Bearer ${config.llm.apiKey}` } : {};
  const need = () => {
    if (!configured) throw new ScraperError("FEATURE_DISABLED", ["LLM (LLM_API_KEY or LOCAL_MODEL_BASE_URL)"]);
  };
  return {
    configured,
    async extract({ markdown, prompt, schema }, signal) {
      need();
      const system =
        "You extract structured data from a web page given as markdown. Answer with one JSON object only." +
        (schema ? ` The object must follow this JSON schema: ${JSON.stringify(schema)}` : "");
      const body = await callJson(metrics, {
        target: "llm",
        url: `${base}/chat/completions`,
        method: "POST",
        headers,
        body: {
          model: config.llm.model,
          temperature: 0,
          response_format: { type: "json_object" },
          messages: [
            { role: "system", content: system },
            {
              role: "user",
              content: `${prompt ?? "Extract the main facts of this page."}\n\n---\n${markdown.slice(0, MAX_INPUT_CHARS)}`,
            },
          ],
        },
        timeoutMs: 60_000,
        retries: 2,
        signal,
      });
      const content = (body as { choices?: { message?: { content?: string } }[] }).choices?.[0]?.message?.content;
      if (typeof content !== "string") throw new ScraperError("UPSTREAM_ERROR", ["llm answered without content"]);
      try {
        return JSON.parse(content.replace(/^```(?:json)?\s*|\s*```$/g, "")) as unknown;
      } catch {
        throw new ScraperError("UPSTREAM_ERROR", ["llm answered with text that is not JSON"]);
      }
    },
    async embed(texts, signal) {
      need();
      const body = await callJson(metrics, {
        target: "llm",
        url: `${base}/embeddings`,
        method: "POST",
        headers,
        body: { model: config.llm.embeddingModel, input: texts },
        timeoutMs: 30_000,
        retries: 2,
        ...(signal ? { signal } : {}),
      });
      const data = (body as { data?: { index?: number; embedding?: number[] }[] }).data;
      if (!Array.isArray(data) || data.length !== texts.length) {
        throw new ScraperError("UPSTREAM_ERROR", ["embedding answer has the wrong shape"]);
      }
      return [...data]
        .sort((a, b) => (a.index ?? 0) - (b.index ?? 0))
        .map((d) => {
          if (!Array.isArray(d.embedding)) throw new ScraperError("UPSTREAM_ERROR", ["embedding missing"]);
          return d.embedding;
        });
    },
  };
}
