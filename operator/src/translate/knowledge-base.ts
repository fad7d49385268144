// Pure parts of KnowledgeBase reconciliation: when a refresh is due, the stable document id of a
// source, the settings sent to the search service, and the status after an ingestion run.
import type { KnowledgeBase, KnowledgeBaseStatus } from "@capstan/shared/api";
import { knowledgeIdOf } from "@capstan/shared/api";
import { type ConditionInput, compact, kubeTime, setConditions } from "../controller/conditions.ts";
import type { KnowledgeBaseInfo, KnowledgeBaseSettings } from "../ingest/search-documents.ts";
import { shortHash } from "./common.ts";
import { parseDuration } from "./duration.ts";

export const KB_FINALIZER = "capstan.dev/knowledge-base";
export const DOCUMENTS_ANNOTATION = "capstan.dev/documents";

/** When the current run of failed refreshes began (absent while every source ingests). */
export const FAILING_SINCE_ANNOTATION = "capstan.dev/failing-since";
/** The first retry after a source failed. */
export const FIRST_RETRY_MS = 30_000;

/**
 * Milliseconds until the next refresh is due; 0 when due now. A refresh in which sources failed
 * (a scraper restarting, a page briefly down) is retried sooner than the interval: 30 s after the
 * first failure, then after as long as the sources have been failing (so the wait doubles),
 * never later than the refresh interval.
 */
export function refreshDueIn(kb: KnowledgeBase, now: Date): number {
  const st = kb.status;
  if (!st?.lastRefreshTime || st.observedGeneration !== kb.metadata.generation) return 0;
  const last = new Date(st.lastRefreshTime).getTime();
  const interval = parseDuration(kb.spec.refreshInterval);
  const since = Date.parse(kb.metadata.annotations?.[FAILING_SINCE_ANNOTATION] ?? "");
  const wait =
    (st.failures ?? 0) > 0 && Number.isFinite(since)
      ? Math.min(interval, Math.max(FIRST_RETRY_MS, last - since))
      : interval;
  return Math.max(0, last + wait - now.getTime());
}

/** A document id that stays the same across refreshes, so a refresh replaces instead of adding. */
export function docsIdFor(sourceName: string, kind: "text" | "url" | "configMap", key = ""): string {
  return `doc_${shortHash([kind, sourceName, key], 24)}`;
}

export function kbSettings(kb: KnowledgeBase): KnowledgeBaseSettings {
  const e = kb.spec.embedding;
  return compact<KnowledgeBaseSettings>({
    embedding: { provider: e.provider, model: e.model, baseURL: e.baseURL, dimensions: e.dimensions },
    chunking: { size: kb.spec.chunking.size, overlap: kb.spec.chunking.overlap },
  });
}

export interface IngestionReport {
  sources: number;
  failed: { source: string; reason: string; message: string }[];
  documents: number;
  chunks: number;
  collection?: string;
  vectors?: KnowledgeBaseInfo["vectors"];
  /** The model answering searches, and the generation still being built (a failed or partial build). */
  servingModel?: string | undefined;
  building?: KnowledgeBaseInfo["building"];
}

export function kbStatus(kb: KnowledgeBase, r: IngestionReport, now: Date): KnowledgeBaseStatus {
  const id = knowledgeIdOf(kb);
  const failures = r.failed.length;
  const ingested: ConditionInput =
    failures === 0
      ? {
          type: "Ingested",
          status: "True",
          reason: "Ingested",
          message: `${r.sources} sources, ${r.documents} documents, ${r.chunks} chunks`,
        }
      : {
          type: "Ingested",
          status: "False",
          reason: r.failed[0]?.reason ?? "IngestionFailed",
          message:
            `${failures}/${r.sources} sources failed; first: ${r.failed[0]?.source}: ${r.failed[0]?.message}`.slice(
              0,
              2000,
            ),
        };
  const allFailed = r.sources > 0 && failures === r.sources;
  const ready: ConditionInput = allFailed
    ? { type: "Ready", status: "False", reason: "IngestionFailed", message: ingested.message }
    : {
        type: "Ready",
        status: "True",
        reason: failures ? "PartiallyIngested" : "Ready",
        message: failures ? ingested.message : `searchable as ${id}`,
      };
  return compact({
    observedGeneration: kb.metadata.generation,
    conditions: setConditions(
      kb.status?.conditions,
      [
        ready,
        {
          type: "CollectionReady",
          status: "True",
          reason: "CollectionReady",
          message: `collection ${r.collection ?? id}`,
        },
        ingested,
      ],
      kb.metadata.generation,
      now,
    ),
    knowledgeId: id,
    collection: r.collection ?? id,
    vectors: r.vectors,
    servingModel: r.servingModel,
    building: r.building,
    documents: r.documents,
    chunks: r.chunks,
    failures,
    lastRefreshTime: kubeTime(now),
    progress: `${r.sources - failures}/${r.sources} sources`,
  });
}

/** Status while the collection cannot be ensured (the search service is down, say). */
export function kbUnavailableStatus(
  kb: KnowledgeBase,
  reason: string,
  message: string,
  now: Date,
): KnowledgeBaseStatus {
  const st = kb.status ?? {};
  return compact({
    ...st,
    observedGeneration: st.observedGeneration,
    knowledgeId: knowledgeIdOf(kb),
    conditions: setConditions(
      st.conditions,
      [
        { type: "Ready", status: "False", reason, message },
        { type: "CollectionReady", status: "False", reason, message },
      ],
      kb.metadata.generation,
      now,
    ),
  });
}

/**
 * Status while a refresh runs: progress and an Ingested=Unknown condition, counts kept; after a
 * model change, the generation being built (searches still use the serving one).
 */
export function kbProgressStatus(
  kb: KnowledgeBase,
  done: number,
  total: number,
  now: Date,
  gens?: Pick<KnowledgeBaseInfo, "model" | "building">,
): KnowledgeBaseStatus {
  const st = kb.status ?? {};
  const kept = (st.conditions ?? []).filter((c) => c.type !== "Ingested");
  const ready = kept.find((c) => c.type === "Ready");
  const wanted: ConditionInput[] = [
    ready
      ? { type: "Ready", status: ready.status, reason: ready.reason, message: ready.message }
      : { type: "Ready", status: "False", reason: "Ingesting", message: "first ingestion in progress" },
    {
      type: "CollectionReady",
      status: "True",
      reason: "CollectionReady",
      message: `collection ${st.collection ?? knowledgeIdOf(kb)}`,
    },
    { type: "Ingested", status: "Unknown", reason: "Refreshing", message: `${done}/${total} sources processed` },
  ];
  return compact({
    ...st,
    knowledgeId: knowledgeIdOf(kb),
    conditions: setConditions(st.conditions, wanted, st.observedGeneration, now),
    progress: `${done}/${total} sources`,
    ...(gens?.model ? { servingModel: gens.model } : {}),
    ...(gens ? { building: gens.building } : {}),
  });
}
