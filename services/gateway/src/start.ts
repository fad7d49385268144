// The gateway process (imported by main.ts once tracing is on): config from env, the resource view from YAML folders (CAPSTAN_RESOURCES_DIR)
// or a read-only watch of the API server (KUBECONFIG or in-cluster), then listen.
import {
  createLogger,
  createRegistry,
  listenInternal,
  loadConfigOrExit,
  releaseMemoryWhenIdle,
  shutdownTracing,
  stopOnSignals,
} from "@capstan/shared";
import { describeRedisTarget, redisTarget } from "@capstan/shared/redis";
import { ResourceView, startResourceSource } from "@capstan/shared/resource-view";
import { buildApp } from "./app.ts";
import { loadGatewayConfig } from "./config.ts";
import { drainAndClose, drainTimes } from "./shutdown.ts";

async function main(): Promise<void> {
  const config = loadConfigOrExit(() => loadGatewayConfig(), "gateway: ");
  const logger = createLogger({ name: "gateway", level: config.logLevel });
  const view = new ResourceView();
  const registry = createRegistry();
  const stopSource = startResourceSource(view, {
    dirs: config.resourcesDirs,
    kinds: ["AccessChannel", "Agent"],
    namespace: config.namespace,
    registry,
    logger,
  });
  const target = redisTarget(config.redisUrl, config.redis);
  logger.info(
    target
      ? { limiter: "redis", redis: describeRedisTarget(target), policy: config.limiter.redisDownPolicy }
      : { limiter: "in-process" },
    target ? "QPM limits shared through Redis" : "REDIS_URL not set: QPM limits are enforced in process, per replica",
  );
  const app = buildApp(config, { view, logger, registry });
  await app.listen({ port: config.port, host: config.host });
  await listenInternal(app, { port: config.internalPort, host: config.host });
  logger.info({ port: config.port, internalPort: config.internalPort }, "listening (internal port: metrics, health)");
  const stopReleasing = releaseMemoryWhenIdle({ logger });

  // Outside Kubernetes (standalone, a launcher, a terminal) nothing routes by readiness: no point
  // in serving on while endpoints catch up, unless the delay is asked for explicitly.
  const inPod = process.env.KUBERNETES_SERVICE_HOST !== undefined;
  const times = drainTimes({
    ...config.shutdown,
    unreadyDelayMs: inPod || process.env.CAPSTAN_SHUTDOWN_UNREADY_DELAY_MS ? config.shutdown.unreadyDelayMs : 0,
  });
  stopOnSignals(
    async () => {
      stopReleasing();
      await drainAndClose(app, times, logger);
      stopSource();
      await shutdownTracing();
    },
    { logger, graceMs: times.exitAfterMs },
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`gateway: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
