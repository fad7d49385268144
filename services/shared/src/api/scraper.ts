// Scraper: one scraping component (reference 2.9-2.10, 4.3, 8). Its spec carries every
// environment variable of the reference and the platform's "scraping" client settings.
import { z } from "zod";
import { baseStatus, httpUrl, secretKeyRef } from "./common.ts";

export const scraperSpec = z.object({
  replicas: z.int().min(0).max(100).default(1),
  image: z.string().max(512).optional().describe("scraper image; default from the operator's config"),
  port: z.int().min(1).max(65535).default(3002).describe("PORT: external port"),
  internalPort: z.int().min(1).max(65535).default(3002).describe("INTERNAL_PORT: port the API listens on in the pod"),
  logLevel: z.enum(["trace", "debug", "info", "warn", "error", "fatal"]).default("info").describe("LOGGING_LEVEL"),
  auth: z
    .object({
      enabled: z.boolean().default(false).describe("AUTH_ENABLED"),
      apiKeySecretRef: secretKeyRef.optional().describe("API_KEY; generated when enabled and absent"),
    })
    .default({ enabled: false }),
  llm: z
    .object({
      apiKeySecretRef: secretKeyRef.optional().describe("LLM_API_KEY"),
      baseURL: httpUrl.default("https://api.openai.com/v1").describe("LLM_BASE_URL"),
      model: z.string().min(1).default("gpt-4o-mini").describe("MODEL_NAME: a small chat model"),
      embeddingModel: z.string().min(1).default("text-embedding-3-small").describe("MODEL_EMBEDDING_NAME"),
      localModelBaseURL: httpUrl.optional().describe("LOCAL_MODEL_BASE_URL: local model server"),
    })
    .default({ baseURL: "https://api.openai.com/v1", model: "gpt-4o-mini", embeddingModel: "text-embedding-3-small" }),
  search: z
    .object({
      endpoint: httpUrl.optional().describe("SEARCH_ENDPOINT: SearXNG-compatible metasearch service"),
      engines: z.array(z.string().min(1)).default(["google", "bing", "duckduckgo"]).describe("SEARCH_ENGINES"),
      categories: z.array(z.string().min(1)).default(["general"]).describe("SEARCH_CATEGORIES"),
    })
    .default({ engines: ["google", "bing", "duckduckgo"], categories: ["general"] }),
  browser: z
    .object({
      blockMedia: z.boolean().default(false).describe("BLOCK_MEDIA: rendering service blocks images, media, fonts"),
      proxy: z
        .object({
          server: z.string().min(1).max(2048).describe("PROXY_SERVER, e.g. http://proxy:3128"),
          usernameSecretRef: secretKeyRef.optional().describe("PROXY_USERNAME"),
          passwordSecretRef: secretKeyRef.optional().describe("PROXY_PASSWORD"),
        })
        .optional(),
    })
    .default({ blockMedia: false }),
  tuning: z
    .object({
      maxConcurrentRequests: z.int().min(1).max(1000).default(10).describe("MAX_CONCURRENT_REQUESTS"),
      requestTimeoutMs: z.int().min(100).max(600_000).default(30_000).describe("REQUEST_TIMEOUT"),
      workerConcurrency: z.int().min(1).max(256).default(5).describe("WORKER_CONCURRENCY"),
      taskTimeoutMs: z.int().min(100).max(3_600_000).default(60_000).describe("TASK_TIMEOUT"),
    })
    .default({ maxConcurrentRequests: 10, requestTimeoutMs: 30_000, workerConcurrency: 5, taskTimeoutMs: 60_000 }),
  allowedHosts: z
    .array(z.string().min(1).max(253))
    .optional()
    .describe("SSRF allow-list: hosts or CIDRs reachable although private (in-cluster sources)"),
  client: z
    .object({
      enabled: z.boolean().default(true).describe("platform setting enabled"),
      url: httpUrl
        .optional()
        .describe("platform setting url; default the Scraper's Service (standalone: http://127.0.0.1:3002)"),
      timeoutSeconds: z.int().min(1).max(600).default(30).describe("platform setting timeout"),
      maxRetries: z.int().min(0).max(10).default(3).describe("platform setting max_retries"),
    })
    .default({ enabled: true, timeoutSeconds: 30, maxRetries: 3 })
    .describe(
      "how the platform calls this scraper (reference 8, 'scraping' settings; api_key is auth.apiKeySecretRef)",
    ),
});

export const scraperStatus = z.object({
  ...baseStatus,
  endpoint: z.string().optional(),
  replicas: z.int().min(0).optional(),
  readyReplicas: z.int().min(0).optional(),
  configHash: z.string().optional(),
});

export type ScraperSpec = z.infer<typeof scraperSpec>;
export type ScraperStatus = z.infer<typeof scraperStatus>;
