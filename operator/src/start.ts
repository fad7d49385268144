// Starts the operator from its config file and environment (imported by main.ts once tracing is
// on); SIGTERM finishes in-flight reconciles and releases the Lease so a standby takes over at once.
import { loadConfigOrExit, releaseMemoryWhenIdle, shutdownTracing, stopOnSignals } from "@capstan/shared";
import { loadKubeConfig } from "@capstan/shared/kube";
import { loadOperatorConfig } from "./config.ts";
import { Operator } from "./manager.ts";
import { buildHealthApp, buildMetricsApp } from "./server.ts";

const config = loadConfigOrExit(() => loadOperatorConfig(process.env));

let kubeConfig: ReturnType<typeof loadKubeConfig>;
try {
  kubeConfig = loadKubeConfig({}, process.env);
} catch (err) {
  console.error(`cannot reach the API server: ${(err as Error).message}`);
  process.exit(2);
}

const operator = new Operator(config, {
  kubeConfig,
  onLostLeadership: () => {
    operator.logger.error("leadership lost; exiting so the pod restarts clean");
    process.exit(1);
  },
});
const health = buildHealthApp(operator);
const metrics = buildMetricsApp(operator);
await health.listen({ port: config.healthPort, host: "0.0.0.0" });
await metrics.listen({ port: config.metricsPort, host: "0.0.0.0" });
await operator.start();
const stopReleasing = releaseMemoryWhenIdle({ logger: operator.logger });

stopOnSignals(
  async () => {
    stopReleasing();
    try {
      await operator.stop();
    } finally {
      await Promise.allSettled([health.close(), metrics.close(), shutdownTracing()]);
    }
  },
  { logger: operator.logger },
);
