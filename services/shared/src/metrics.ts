// One prom-client registry per process, with the default Node metrics, so tests can build
// several apps in one process without metric-name collisions.
import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

export { Counter, Gauge, Histogram, Registry } from "prom-client";

export function createRegistry(service: string, opts: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  return registry;
}

/** Latency buckets (seconds) from 1 ms to 60 s. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Metrics every outbound client carries: calls by target and outcome, latency, retries. */
export function outboundMetrics(registry: Registry, prefix: string) {
  return {
    calls: new Counter({
      name: `${prefix}_outbound_requests_total`,
      help: "Outbound calls by target and outcome",
      labelNames: ["target", "outcome"] as const,
      registers: [registry],
    }),
    latency: new Histogram({
      name: `${prefix}_outbound_request_duration_seconds`,
      help: "Outbound call latency",
      labelNames: ["target"] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    retries: new Counter({
      name: `${prefix}_outbound_retries_total`,
      help: "Outbound retries",
      labelNames: ["target"] as const,
      registers: [registry],
    }),
  };
}
export type OutboundMetrics = ReturnType<typeof outboundMetrics>;
