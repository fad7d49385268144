// The console process (started by main.ts once tracing is on): config from env, the cluster from KUBECONFIG or the in-cluster
// ServiceAccount (only its server and CA are used: users act with their own tokens), or standalone
// mode's YAML folder (started so by `npm start`), then listen: the page and its API on PORT,
// /metrics, /healthz and /readyz on CAPSTAN_INTERNAL_PORT.
import {
  createLogger,
  createRegistry,
  listenInternal,
  loadConfigOrExit,
  releaseMemoryWhenIdle,
  stopOnSignals,
} from "@capstan/shared";
import { loadKubeConfig } from "@capstan/shared/kube";
import { shutdownTracing } from "@capstan/shared/tracing";
import { buildApp } from "./app.ts";
import { loadConsoleConfig, standaloneOf } from "./config.ts";

async function main(): Promise<void> {
  const config = loadConfigOrExit(() => loadConsoleConfig(), "console: ");
  const logger = createLogger({ name: "console", level: config.logLevel });
  const registry = createRegistry();
  const cluster = standaloneOf(config) ? undefined : loadKubeConfig();
  const app = await buildApp(config, { cluster, logger, registry });
  await app.listen({ port: config.port, host: config.host });
  // Metrics and health on their own port, which the Service users reach does not carry.
  await listenInternal(app, { port: config.internalPort, host: config.host });
  const stopReleasing = releaseMemoryWhenIdle({ logger });
  stopOnSignals(
    async () => {
      stopReleasing();
      await app.close();
      await shutdownTracing();
    },
    { logger },
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`console: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
