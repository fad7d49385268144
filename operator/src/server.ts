// Health and metrics endpoints, as controller-runtime serves them on two ports: /healthz and
// /readyz (ready once the caches have synced) on the health port, Prometheus on the metrics port.
import { buildBaseApp, createRegistry } from "@capstan/shared";
import type { Operator } from "./manager.ts";

export function buildHealthApp(op: Operator): ReturnType<typeof buildBaseApp> {
  return buildBaseApp({
    service: "capstan-operator",
    registry: createRegistry({ defaultMetrics: false }),
    notReady: () => (op.hasSynced ? undefined : "caches not synced"),
  });
}

export function buildMetricsApp(op: Operator): ReturnType<typeof buildBaseApp> {
  return buildBaseApp({ service: "capstan-operator", registry: op.registry });
}
