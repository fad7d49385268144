// The operator's own metrics about what it manages (capstan_operator_*), beside the
// controller-runtime-style reconcile, workqueue, rest_client and leader-election metrics that keep
// their established names. All labels are bounded: kind, state, result. Key expiry is exported as
// the soonest expiry per kind (not one series per key), which is what an "a key expires within
// N days" alert needs; `kubectl get accesschannels,searchkeys -A` then names the key.
import { type MetricFamilies, metricFamilies, type Registry } from "@capstan/shared";
import type { Informers } from "./reconcilers/informers.ts";

export function operatorMetrics(registry: Registry, informers: Informers, now: () => Date = () => new Date()) {
  const m = metricFamilies(registry);
  const metrics = {
    ...ingestMetrics(m),
    knowledgeBases: knowledgeBasesGauge(m, informers),
    ...keyGauges(m, informers, now),
  };
  // Every outcome exists at 0 from the start, so "failed per hour" reads 0 rather than nothing.
  for (const result of ["ok", "partial", "failed"]) metrics.ingestRuns.inc({ result }, 0);
  for (const outcome of ["ingested", "failed"]) metrics.ingestSources.inc({ outcome }, 0);
  return metrics;
}
export type OperatorMetrics = ReturnType<typeof operatorMetrics>;

/** What the knowledge-base reconciler counts as it ingests. */
function ingestMetrics(m: MetricFamilies) {
  return {
    ingestRuns: m.counter(
      "capstan_operator_ingest_runs_total",
      "Knowledge-base ingestion runs by result: ok (every source), partial (some sources failed), failed (all failed)",
      ["result"],
    ),
    ingestSources: m.counter(
      "capstan_operator_ingest_sources_total",
      "Knowledge-base sources processed by ingestion runs, by outcome (ingested, failed)",
      ["outcome"],
    ),
    ingestDocuments: m.counter("capstan_operator_ingest_documents_total", "Documents sent to search by ingestion runs"),
    ingestsInFlight: m.gauge("capstan_operator_ingests_in_flight", "Knowledge bases being ingested right now"),
  };
}

/** Knowledge bases by their Ready condition, counted from the informer's cache at each scrape. */
function knowledgeBasesGauge(m: MetricFamilies, informers: Informers) {
  return m.gauge(
    "capstan_operator_knowledge_bases",
    "Knowledge bases by their Ready condition (True, False, Unknown)",
    ["ready"],
    function collect() {
      const counts: Record<string, number> = { True: 0, False: 0, Unknown: 0 };
      for (const kb of informers.knowledgeBases.list()) {
        const ready = kb.status?.conditions?.find((c) => c.type === "Ready")?.status ?? "Unknown";
        counts[ready] = (counts[ready] ?? 0) + 1;
      }
      for (const [ready, n] of Object.entries(counts)) this.set({ ready }, n);
    },
  );
}

/** Keys by state and the soonest expiry per kind, from the informers' caches at each scrape. */
function keyGauges(m: MetricFamilies, informers: Informers, now: () => Date) {
  const keyExpiries = (): { kind: string; expiry: (string | undefined)[] }[] => [
    { kind: "AccessChannel", expiry: informers.channels.list().map((c) => c.spec.expiresAt) },
    { kind: "SearchKey", expiry: informers.searchKeys.list().map((k) => k.spec.validUntil) },
  ];
  return {
    keys: m.gauge(
      "capstan_operator_keys",
      "Keys (AccessChannel, SearchKey) by state: valid (expires later), expired, no_expiry",
      ["kind", "state"],
      function collect() {
        const t = now().getTime();
        for (const { kind, expiry } of keyExpiries()) {
          const counts = { valid: 0, expired: 0, no_expiry: 0 };
          for (const e of expiry) {
            if (!e) counts.no_expiry++;
            else if (Date.parse(e) <= t) counts.expired++;
            else counts.valid++;
          }
          for (const [state, n] of Object.entries(counts)) this.set({ kind, state }, n);
        }
      },
    ),
    nextKeyExpiry: m.gauge(
      "capstan_operator_key_next_expiry_timestamp_seconds",
      "Unix time of the soonest expiry among keys not yet expired, by kind (absent when none expires)",
      ["kind"],
      function collect() {
        const t = now().getTime();
        this.reset();
        for (const { kind, expiry } of keyExpiries()) {
          const future = expiry.map((e) => (e ? Date.parse(e) : Number.NaN)).filter((ms) => ms > t);
          if (future.length > 0) this.set({ kind }, Math.min(...future) / 1000);
        }
      },
    ),
  };
}
