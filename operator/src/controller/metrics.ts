// controller-runtime's controller metrics, by the same names and labels.
import { type Counter, type Gauge, type Histogram, metricFamilies, type Registry } from "@capstan/shared";

export interface ControllerMetrics {
  total: Counter<"controller" | "result">;
  errors: Counter<"controller">;
  time: Histogram<"controller">;
  maxConcurrent: Gauge<"controller">;
  activeWorkers: Gauge<"controller">;
}

export function controllerMetrics(registry: Registry): ControllerMetrics {
  const m = metricFamilies(registry);
  return {
    total: m.counter("controller_runtime_reconcile_total", "Total number of reconciliations per controller", [
      "controller",
      "result",
    ]),
    errors: m.counter(
      "controller_runtime_reconcile_errors_total",
      "Total number of reconciliation errors per controller",
      ["controller"],
    ),
    time: m.histogram(
      "controller_runtime_reconcile_time_seconds",
      "Length of time per reconciliation per controller",
      ["controller"],
      [
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5,
        1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
      ],
    ),
    maxConcurrent: m.gauge(
      "controller_runtime_max_concurrent_reconciles",
      "Maximum number of concurrent reconciles per controller",
      ["controller"],
    ),
    activeWorkers: m.gauge("controller_runtime_active_workers", "Number of currently used workers per controller", [
      "controller",
    ]),
  };
}
