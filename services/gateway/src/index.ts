// @capstan/gateway: the OpenAI-compatible chat gateway.

export type { Retriever, SearchQuery, SearchResult } from "./agents/retrieval.ts";
export { modeOf } from "./agents/types.ts";
export { buildApp, type GatewayDeps } from "./app.ts";
export {
  GATEWAY_STRICT_ENV,
  type GatewayConfig,
  type GatewayConfigInput,
  gatewayConfigSchema,
  gatewayEnvMap,
  loadGatewayConfig,
  parseGatewayConfig,
} from "./config.ts";
export { ERRORS, type ErrorCode, GatewayError } from "./errors.ts";
export {
  ChainSecretResolver,
  EnvSecretResolver,
  envSecretName,
  FileSecretResolver,
  type SecretResolver,
} from "./secrets.ts";
