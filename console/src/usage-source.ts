// Which sources the usage page reads: for the last hour's charts (usage.ts), Prometheus when one
// is configured, else every gateway replica the gateway Service's EndpointSlices list (in a
// cluster), else the metrics URLs given (standalone mode); for the hourly tokens kept in Redis
// (usage-hourly.ts), those same replicas. None of them: the page says it is not configured.
import type { OutboundMetrics, Registry } from "@capstan/shared";
import type { KubeConfig } from "@capstan/shared/kube";
import { OutboundPolicy } from "@capstan/shared/resilience";
import type { ConsoleConfig } from "./config.ts";
import { GatewayReplicas } from "./gateway-replicas.ts";
import { PrometheusUsage } from "./prometheus-usage.ts";
import { replicaPolicy, UsageRecorder, type UsageSource } from "./usage.ts";
import { HourlyUsage } from "./usage-hourly.ts";

type Deps = { cluster: KubeConfig | undefined; registry: Registry; metrics: OutboundMetrics };

/** The gateway replicas' metrics URLs (one lookup object per process), or undefined. */
function replicaTargets(config: ConsoleConfig, deps: Deps) {
  if (config.gatewayMetricsService && deps.cluster) {
    const replicas = new GatewayReplicas(deps.cluster, config.gatewayMetricsService, deps.registry);
    return { urls: () => replicas.metricsUrls(), describe: replicas.describe() };
  }
  if (config.gatewayMetricsUrls.length > 0) {
    const urls = config.gatewayMetricsUrls;
    return { urls: async () => urls, describe: urls.join(", ") };
  }
  return undefined;
}

export function usageSources(
  config: ConsoleConfig,
  deps: Deps,
): { usage: UsageSource | undefined; hourly: HourlyUsage | undefined } {
  const targets = replicaTargets(config, deps);
  const policy = replicaPolicy(deps.metrics);
  const hourly = targets ? new HourlyUsage(targets.urls, policy) : undefined;
  if (config.prometheusUrl) {
    const prometheus = new OutboundPolicy({
      target: "prometheus",
      timeoutMs: 10_000,
      maxAttempts: 2,
      baseDelayMs: 200,
      metrics: deps.metrics,
    });
    return {
      usage: new PrometheusUsage({
        url: config.prometheusUrl,
        selector: config.prometheusSelector,
        policy: prometheus,
      }),
      hourly,
    };
  }
  if (!targets) return { usage: undefined, hourly };
  return { usage: new UsageRecorder(targets.urls, { describe: targets.describe, policy }), hourly };
}
