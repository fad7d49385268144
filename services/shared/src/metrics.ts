// One prom-client registry per process, with the default Node metrics, so tests can build
// several apps in one process without metric-name collisions.
//
// Naming (docs/observability.md): every Capstan metric is `capstan_<component>_<what>`, with its
// unit in the name (`_seconds`, `_bytes`) and `_total` on counters. No default label is set: the
// target labels Prometheus adds (job, instance, namespace, pod, service) tell processes apart, and
// a `service` label of our own would collide with the one a ServiceMonitor adds. Histograms carry
// only bounded labels (route, stage, outcome, ...): never a channel, key or knowledge base.
import { Counter, collectDefaultMetrics, Gauge, type GaugeConfiguration, Histogram, Registry } from "prom-client";

import { exportAttempts, exportRetries } from "./trace-export-stats.ts";

export { Counter, Gauge, Histogram, Registry } from "prom-client";

/**
 * A new registry. The Node runtime metrics (`process_*`, `nodejs_*`) keep prom-client's standard
 * names, which existing Node.js dashboards expect.
 */
export function createRegistry(opts: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (opts.defaultMetrics ?? true) {
    collectDefaultMetrics({ register: registry });
    traceExportMetrics(registry);
  }
  return registry;
}

/** The process's span exports (trace-export.ts), read at each scrape: 0 without an exporter. */
function traceExportMetrics(registry: Registry): void {
  new Counter({
    name: "capstan_trace_export_requests_total",
    help: "OTLP span export requests by outcome (ok, http_<status>, timeout, error), per attempt",
    labelNames: ["outcome"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [outcome, n] of exportAttempts) this.inc({ outcome }, n);
    },
  });
  new Counter({
    name: "capstan_trace_export_retries_total",
    help: "OTLP span export attempts that retried an earlier one",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(exportRetries.count);
    },
  });
}

/** `capstan_<component>` for a service name: "gateway" → capstan_gateway, "scraper-render" → capstan_scraper_render. */
export function metricsPrefix(service: string): string {
  return `capstan_${service.replace(/^capstan-/, "").replace(/[^a-zA-Z0-9]+/g, "_")}`;
}

/**
 * Defines a set of metric families on one registry. Each call names its family in full, with its
 * help and its label names, so a metric's name found on a dashboard finds its definition by grep;
 * only the registry, which every family of a set shares, is given once. Label names type the
 * family (`counter("x_total", "...", ["mode"])` is a Counter<"mode">); none means no labels.
 */
export function metricFamilies(registry: Registry) {
  const registers = [registry];
  return {
    counter: <L extends string = never>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Counter<L>({ name, help, labelNames, registers }),
    /** `collect` (optional) sets the gauge's values from some state at each scrape. */
    gauge: <L extends string = never>(
      name: string,
      help: string,
      labelNames: readonly L[] = [],
      collect?: GaugeConfiguration<L>["collect"],
    ) => new Gauge<L>({ name, help, labelNames, registers, ...(collect ? { collect } : {}) }),
    histogram: <L extends string = never>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
      new Histogram<L>({ name, help, labelNames, buckets, registers }),
  };
}
export type MetricFamilies = ReturnType<typeof metricFamilies>;

/** Latency buckets (seconds) from 1 ms to 60 s. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Keeps a label with per-tenant values (a channel id) bounded: the first `limit` distinct values
 * are kept as they are, every later one is counted under "other". Used on counters only; a
 * restart starts a new set. The limit is the operator's choice (a Helm value): with it, a
 * counter labelled by channel holds at most limit + 1 values of that label.
 */
export class BoundedLabel {
  static readonly OTHER = "other";
  private readonly seen = new Set<string>();
  readonly limit: number;
  constructor(limit: number) {
    this.limit = limit;
  }

  value(v: string): string {
    if (this.seen.has(v)) return v;
    if (this.seen.size >= this.limit) return BoundedLabel.OTHER;
    this.seen.add(v);
    return v;
  }
}

/**
 * Metrics every outbound client carries, recorded by the shared resilience policy
 * (resilience/policy.ts), so every dependency is measured the same way. Per attempt: requests by
 * target and outcome (ok, http_<status>, timeout, error, circuit_open), their latency, retries.
 * Per call: how many attempts it took and how it ended (ok, failed, gave_up, circuit_open,
 * cancelled), and its whole duration. Labels stay bounded: a target names a dependency or an
 * operation, never a key, channel or URL.
 */
export function outboundMetrics(registry: Registry, prefix: string) {
  const m = metricFamilies(registry);
  return {
    callAttempts: m.histogram(
      `${prefix}_outbound_call_attempts`,
      "Attempts per outbound call, by target and final outcome",
      ["target", "outcome"],
      [1, 2, 3, 4, 5, 6, 8, 11],
    ),
    callDuration: m.histogram(
      `${prefix}_outbound_call_duration_seconds`,
      "Whole outbound call (every attempt and backoff), by target",
      ["target"],
      LATENCY_BUCKETS,
    ),
    calls: m.counter(`${prefix}_outbound_requests_total`, "Outbound calls by target and outcome", [
      "target",
      "outcome",
    ]),
    latency: m.histogram(
      `${prefix}_outbound_request_duration_seconds`,
      "Outbound call latency",
      ["target"],
      LATENCY_BUCKETS,
    ),
    retries: m.counter(`${prefix}_outbound_retries_total`, "Outbound retries", ["target"]),
  };
}
export type OutboundMetrics = ReturnType<typeof outboundMetrics>;
