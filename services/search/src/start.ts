// The search process (imported by main.ts once tracing is on): config from env (and CAPSTAN_SEARCH_CONFIG), the resource view from YAML
// folders (standalone) or the Kubernetes API (read-only), then buildApp() and listen().

import {
  createLogger,
  createRegistry,
  listenInternal,
  loadConfigOrExit,
  releaseMemoryWhenIdle,
  shutdownTracing,
  stopOnSignals,
} from "@capstan/shared";
import { ResourceView, startResourceSource } from "@capstan/shared/resource-view";
import { buildApp } from "./app.ts";
import { loadSearchConfig } from "./config.ts";

async function main(): Promise<void> {
  const config = loadConfigOrExit(() => loadSearchConfig());
  const logger = createLogger({ name: "search", level: config.logLevel });
  const view = new ResourceView();
  const registry = createRegistry();
  const stopSource = startResourceSource(view, {
    dirs: config.resourcesDirs,
    kinds: ["SearchKey", "KnowledgeBase"],
    namespace: config.namespace,
    kubeconfig: config.kubeconfig,
    registry,
    logger,
  });
  if (!config.internalToken) logger.warn("CAPSTAN_INTERNAL_TOKEN not set: the internal documents API is disabled");

  const app = await buildApp(config, { view, logger, registry });
  await app.listen({ port: config.port, host: config.host });
  await listenInternal(app, { port: config.internalPort, host: config.host });
  logger.info(
    { port: config.port, internalPort: config.internalPort },
    "listening (internal port: documents, metrics, health)",
  );
  const stopReleasing = releaseMemoryWhenIdle({ logger });

  stopOnSignals(
    async () => {
      stopReleasing();
      stopSource();
      await app.close();
      await shutdownTracing();
    },
    { logger },
  );
}

void main().catch((err: unknown) => {
  process.stderr.write(`search failed to start: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
