// KnowledgeBase: a set of documents (id kb_<id>) with an embedding model, chunking and sources.
// Becomes a vector collection (or tenant), ingested and refreshed chunks, and counts in status.
import { z } from "zod";
import {
  baseStatus,
  duration,
  httpUrl,
  knowledgeId,
  localObjectRef,
  objectName,
  secretKeyRef,
  timestamp,
} from "./common.ts";

export const embeddingSpec = z
  .object({
    provider: z
      .enum(["local", "openai"])
      .default("local")
      .describe("local: in-process sentence-embedding model; openai: an OpenAI-compatible /v1/embeddings"),
    model: z.string().min(1).max(256).default("all-MiniLM-L6-v2").describe("embedding model name"),
    baseURL: httpUrl.optional().describe("for provider openai"),
    apiKeySecretRef: secretKeyRef.optional().describe("for provider openai"),
    dimensions: z.int().min(1).max(8192).optional().describe("vector size; read from the model when absent"),
  })
  .meta({
    "x-kubernetes-validations": [
      {
        rule: "self.provider != 'openai' || has(self.baseURL)",
        message: "embedding.baseURL is required for provider openai",
      },
    ],
  });

export const chunkingSpec = z
  .object({
    size: z.int().min(64).max(16_000).default(800).describe("target chunk size in characters"),
    overlap: z.int().min(0).max(8_000).default(100).describe("characters shared by neighbouring chunks"),
  })
  .meta({
    "x-kubernetes-validations": [
      { rule: "self.overlap < self.size", message: "chunking.overlap must be smaller than chunking.size" },
    ],
  });

const pathPatterns = z
  .array(z.string().min(1).max(1000))
  .max(100)
  .optional()
  .describe("regular expressions (RE2) tested against each page URL's path, as the scraper's crawl API");

/** A crawl of a site (the scraper's POST /crawl, Firecrawl v1 names): each page fetched is one document. */
export const crawlSource = z.object({
  url: httpUrl.describe("start URL; the crawl stays on its site and below its path"),
  limit: z.int().min(1).max(50_000).default(100).describe("most pages fetched (and documents kept) per refresh"),
  maxDepth: z
    .int()
    .min(0)
    .max(100)
    .optional()
    .describe("most path segments a page may have below the start URL's path; absent: the scraper's default (10)"),
  includePaths: pathPatterns.describe("only pages whose path matches one of these become documents"),
  excludePaths: pathPatterns.describe("pages whose path matches one of these are neither fetched nor followed"),
});

export const knowledgeSource = z
  .object({
    name: z
      .string()
      .min(1)
      .max(256)
      .describe(
        "document name (docsName) for inline and ConfigMap sources; a label for URLs; the prefix of a crawl's document names",
      ),
    url: httpUrl.optional().describe("page fetched through the Scraper"),
    crawl: crawlSource.optional().describe("a site crawled through the Scraper: one document per page"),
    text: z.string().max(1_000_000).optional().describe("inline document text"),
    configMap: z
      .object({
        name: objectName("ConfigMap name, in the KnowledgeBase's namespace"),
        keys: z.array(z.string().min(1)).optional().describe("keys to ingest as documents; absent: all"),
      })
      .optional()
      .describe("each key of the ConfigMap is one document"),
  })
  .meta({
    "x-kubernetes-validations": [
      {
        rule: "(has(self.url) ? 1 : 0) + (has(self.text) ? 1 : 0) + (has(self.configMap) ? 1 : 0) + (has(self.crawl) ? 1 : 0) == 1",
        message: "a source sets exactly one of url, text, configMap, crawl",
      },
    ],
  })
  // The same rule for clients that validate with zod (the console, the standalone launcher).
  .refine((s) => [s.url, s.text, s.configMap, s.crawl].filter((v) => v !== undefined).length === 1, {
    message: "a source sets exactly one of url, text, configMap, crawl",
  });

export const knowledgeBaseSpec = z.object({
  knowledgeId: knowledgeId.optional().describe("id clients search with; default kb_<metadata.name with - as _>"),
  description: z.string().max(1024).optional(),
  embedding: embeddingSpec.default({ provider: "local", model: "all-MiniLM-L6-v2" }),
  chunking: chunkingSpec.default({ size: 800, overlap: 100 }),
  sources: z.array(knowledgeSource).max(10_000).default([]),
  scraperRef: localObjectRef
    .optional()
    .describe("Scraper that fetches url and crawl sources; absent: the platform scraping settings"),
  refreshInterval: duration.default("24h").describe("how often url, crawl and ConfigMap sources are fetched again"),
  scrapeOptions: z
    .object({
      waitFor: z.int().min(0).max(60_000).optional().describe("milliseconds to wait after load"),
      onlyMainContent: z.boolean().default(true),
    })
    .optional(),
});

export const knowledgeBaseStatus = z.object({
  ...baseStatus,
  knowledgeId: z.string().optional(),
  collection: z.string().optional().describe("vector collection (and tenant) holding the chunks"),
  vectors: z
    .object({
      backend: z.enum(["embedded", "qdrant"]),
      size: z.int().min(1).describe("vector dimensions of the embedding model"),
      distance: z.string().describe("similarity of the index, e.g. Cosine"),
      hnsw: z
        .object({
          m: z.int().min(0).describe("graph degree; 0 with payloadM: one graph per knowledge base"),
          payloadM: z.int().min(0).optional(),
          efConstruct: z.int().min(0),
          efSearch: z.int().min(0),
        })
        .describe("HNSW index settings"),
    })
    .optional()
    .describe("how the collection stores vectors, derived from the embedding model"),
  servingModel: z
    .string()
    .optional()
    .describe(
      "embedding model of the vector set (the knowledge base's vectors embedded by one model) that answers searches",
    ),
  building: z
    .object({
      model: z.string(),
      dimensions: z.int().min(1),
      documents: z.int().min(0),
      chunks: z.int().min(0),
    })
    .optional()
    .describe(
      "after a model change: the vector set being built beside the serving one, which answers until it is complete",
    ),
  documents: z.int().min(0).optional().describe("documents of the serving vector set"),
  chunks: z.int().min(0).optional().describe("chunks of the serving vector set"),
  uploaded: z
    .object({ documents: z.int().min(0), chunks: z.int().min(0) })
    .optional()
    .describe(
      "of documents and chunks: those uploaded through search's public documents API (kept across refreshes, not from sources)",
    ),
  failures: z.int().min(0).optional().describe("sources that failed in the last refresh"),
  failedSources: z
    .array(z.string())
    .max(50)
    .optional()
    .describe("names of the sources that failed in the last refresh (they keep their previous documents)"),
  lastRefreshTime: timestamp.optional(),
  progress: z.string().optional().describe("ingestion progress, e.g. 12/40 sources"),
  refresh: z
    .object({
      // Not `id`: the CRD generator drops JSON Schema's `id` keyword wherever it appears.
      name: z.string().max(64).describe("the refresh's name: every document it writes or confirms is stamped with it"),
      startedAt: timestamp,
    })
    .optional()
    .describe("the refresh in progress (absent between refreshes): an operator that restarts resumes it"),
});

export type KnowledgeBaseSpec = z.infer<typeof knowledgeBaseSpec>;
export type KnowledgeBaseStatus = z.infer<typeof knowledgeBaseStatus>;

/** What ownerFirst reads of a KnowledgeBase. */
interface Claimant {
  metadata: { name: string; creationTimestamp?: string | undefined };
  spec: { knowledgeId?: string | undefined };
  status?: { knowledgeId?: string | undefined; conditions?: readonly { reason?: string | undefined }[] } | undefined;
}

/**
 * True when the operator has already reconciled kb as the owner of its current id: its status names
 * that id and it was not refused as a duplicate.
 */
function holdsId(kb: Claimant): boolean {
  const status = kb.status;
  if (!status?.knowledgeId || status.knowledgeId !== knowledgeIdOf(kb)) return false;
  return !(status.conditions ?? []).some((c) => c.reason === "DuplicateKnowledgeId");
}

/**
 * Which of several KnowledgeBases of one namespace claiming the same knowledgeId owns it: the one
 * that already holds it, then the oldest, then the first by name. Holding comes first because
 * creation times have one-second resolution: without it, a KnowledgeBase created in the same second
 * as the owner with a name that sorts first would take over the owner's vectors. The operator
 * reports the others DuplicateKnowledgeId and search reads only the owner's settings.
 */
export function ownerFirst(a: Claimant, b: Claimant): number {
  const ha = holdsId(a);
  if (ha !== holdsId(b)) return ha ? -1 : 1;
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  return ta < tb ? -1 : ta > tb ? 1 : a.metadata.name.localeCompare(b.metadata.name);
}

/** The id a KnowledgeBase answers to: its spec.knowledgeId, or kb_ + its name with dashes as underscores. */
export function knowledgeIdOf(kb: { metadata: { name: string }; spec: { knowledgeId?: string | undefined } }): string {
  return kb.spec.knowledgeId ?? `kb_${kb.metadata.name.replace(/[-.]/g, "_")}`;
}
