// Which source the usage page reads (usage.ts): Prometheus when one is configured, else every
// gateway replica the gateway Service's EndpointSlices list (in a cluster), else the metrics URLs
// given (standalone mode); none of them: the page says it is not configured.
import type { OutboundMetrics, Registry } from "@capstan/shared";
import type { KubeConfig } from "@capstan/shared/kube";
import { OutboundPolicy } from "@capstan/shared/resilience";
import type { ConsoleConfig } from "./config.ts";
import { GatewayReplicas } from "./gateway-replicas.ts";
import { PrometheusUsage } from "./prometheus-usage.ts";
import { replicaPolicy, UsageRecorder, type UsageSource } from "./usage.ts";

export function usageSource(
  config: ConsoleConfig,
  deps: { cluster: KubeConfig | undefined; registry: Registry; metrics: OutboundMetrics },
): UsageSource | undefined {
  if (config.prometheusUrl) {
    const policy = new OutboundPolicy({
      target: "prometheus",
      timeoutMs: 10_000,
      maxAttempts: 2,
      baseDelayMs: 200,
      metrics: deps.metrics,
    });
    return new PrometheusUsage({ url: config.prometheusUrl, selector: config.prometheusSelector, policy });
  }
  const policy = replicaPolicy(deps.metrics);
  if (config.gatewayMetricsService && deps.cluster) {
    const replicas = new GatewayReplicas(deps.cluster, config.gatewayMetricsService, deps.registry);
    return new UsageRecorder(() => replicas.metricsUrls(), { describe: replicas.describe(), policy });
  }
  if (config.gatewayMetricsUrls.length > 0) {
    const urls = config.gatewayMetricsUrls;
    return new UsageRecorder(async () => urls, { describe: urls.join(", "), policy });
  }
  return undefined;
}
