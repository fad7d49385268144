// @capstan/search: knowledge search (POST /v1/rag/search, batch) and the internal documents API.
export { buildApp, type SearchDeps } from "./app.ts";
export { chunkText } from "./chunking.ts";
export {
  loadSearchConfig,
  SEARCH_STRICT_ENV,
  type SearchConfig,
  type SearchConfigInput,
  searchConfigSchema,
  searchEnvMap,
} from "./config.ts";
export { createEmbedders, loadLocalEmbedder } from "./embedding/factory.ts";
export { LocalEmbedder } from "./embedding/local.ts";
export { locateModelFiles } from "./embedding/model-files.ts";
export { OpenAIEmbedder } from "./embedding/openai.ts";
export type { Embedder } from "./embedding/provider.ts";
export { type Envelope, ERRORS, SearchError } from "./errors.ts";
export { ExternalReranker } from "./rerank/external.ts";
export { HybridReranker } from "./rerank/hybrid.ts";
export type { Reranker } from "./rerank/types.ts";
export type { SearchRequest, SearchResult } from "./search-engine.ts";
export { EmbeddedStore } from "./store/embedded.ts";
export { QdrantStore } from "./store/qdrant.ts";
export type { VectorStore } from "./store/types.ts";
