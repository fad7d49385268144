// Pure parts of KnowledgeBase reconciliation: when a refresh is due, the stable document id of a
// source, the settings sent to the search service, and the status after an ingestion run.
import type { KnowledgeBase, KnowledgeBaseStatus } from "@capstan/shared/api";
import { knowledgeIdOf } from "@capstan/shared/api";
import { type ConditionInput, compact, kubeTime, setConditions } from "../controller/conditions.ts";
import type { KnowledgeBaseInfo, KnowledgeBaseSettings } from "../ingest/search-documents.ts";
import { shortHash } from "./common.ts";
import { parseDuration } from "./duration.ts";

export const KB_FINALIZER = "capstan.dev/knowledge-base";
/**
 * Legacy: where operators before search held the documents kept each source's document ids, as
 * JSON {sourceId: [docsId, ...]} (earlier: a comma-separated list). Read once, by the first
 * complete refresh, whose prune deletes those it did not write; then removed.
 */
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
export function docsIdFor(sourceName: string, kind: "text" | "url" | "configMap" | "crawl", key = ""): string {
  return `doc_${shortHash([kind, sourceName, key], 24)}`;
}

/** The id of a source: the document id of a url or text source, the prefix of nothing else. */
export function sourceIdOf(source: {
  name: string;
  url?: string | undefined;
  text?: string | undefined;
  crawl?: unknown;
}): string {
  if (source.crawl !== undefined) return docsIdFor(source.name, "crawl");
  return docsIdFor(source.name, source.text !== undefined ? "text" : source.url !== undefined ? "url" : "configMap");
}

type SourceDocs = Record<string, string[]>;

/** The annotation's documents by source; the legacy comma list comes back under the key "". */
export function parseDocuments(annotation: string | undefined): SourceDocs {
  const raw = (annotation ?? "").trim();
  if (raw === "") return {};
  if (raw.startsWith("{")) {
    try {
      const parsed = JSON.parse(raw) as unknown;
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
        return Object.fromEntries(
          Object.entries(parsed as Record<string, unknown>).map(([k, v]) => [
            k,
            Array.isArray(v) ? v.filter((d): d is string => typeof d === "string") : [],
          ]),
        );
      }
    } catch {
      // unreadable: treated like the legacy list below (nothing is deleted on its account)
    }
  }
  return { "": raw.split(",").filter(Boolean) };
}

/** Every document id of the legacy annotation (either form). */
export function legacyDocuments(annotation: string | undefined): string[] {
  return [...new Set(Object.values(parseDocuments(annotation)).flat())].sort();
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
  /** The model answering searches, and the vector set still being built (a failed or partial build). */
  servingModel?: string | undefined;
  building?: KnowledgeBaseInfo["building"];
  /** Documents uploaded through the public documents API (part of documents and chunks). */
  uploaded?: KnowledgeBaseInfo["uploaded"];
  /** Pages the crawl sources fetched in this run (each one a document). */
  crawledPages?: number;
}

/** status.progress: sources done of all, and the pages crawled when there are crawl sources. */
function progressText(done: number, total: number, pages: number | undefined): string {
  return `${done}/${total} sources${pages ? `, ${pages} pages crawled` : ""}`;
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
  // Failed sources keep their previous documents: the knowledge base answers from what it has,
  // and is not Ready only when it has nothing at all to answer from.
  const allFailed = r.sources > 0 && failures === r.sources && r.documents === 0;
  const ready: ConditionInput = allFailed
    ? { type: "Ready", status: "False", reason: "IngestionFailed", message: ingested.message }
    : {
        type: "Ready",
        status: "True",
        reason: failures ? "PartiallyIngested" : "Ready",
        message: failures ? `searchable as ${id}; ${ingested.message}` : `searchable as ${id}`,
      };
  const names = r.failed.map((f) => f.source);
  const degraded: ConditionInput =
    failures === 0
      ? { type: "Degraded", status: "False", reason: "AllSourcesIngested", message: "every source ingested" }
      : {
          type: "Degraded",
          status: "True",
          reason: "SourcesFailed",
          message:
            `failed sources keep their previous documents and are retried with backoff: ${names.join(", ")}`.slice(
              0,
              2000,
            ),
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
        degraded,
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
    uploaded: r.uploaded,
    failures,
    failedSources: failures ? names.slice(0, 50) : undefined,
    lastRefreshTime: kubeTime(now),
    progress: progressText(r.sources - failures, r.sources, r.crawledPages),
  });
}

/**
 * Status of a KnowledgeBase whose knowledgeId an older KnowledgeBase of the same namespace already
 * has: it gets no collection and never writes into the other one's.
 */
export function kbDuplicateStatus(kb: KnowledgeBase, owner: string, now: Date): KnowledgeBaseStatus {
  const id = knowledgeIdOf(kb);
  const message = `knowledge id ${id} is already used by KnowledgeBase ${owner} in this namespace; choose another spec.knowledgeId`;
  return compact({
    observedGeneration: kb.metadata.generation,
    knowledgeId: id,
    conditions: setConditions(
      kb.status?.conditions,
      [
        { type: "Ready", status: "False", reason: "DuplicateKnowledgeId", message },
        { type: "CollectionReady", status: "False", reason: "DuplicateKnowledgeId", message },
      ],
      kb.metadata.generation,
      now,
    ),
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

/** The vector sets a run's ensure found, and the serving one's layout. */
export type RunVectorSets = Pick<KnowledgeBaseInfo, "model" | "building" | "collection" | "vectors">;

/**
 * Status while a refresh runs: progress and an Ingested=Unknown condition, counts kept; after a
 * model change, the vector set being built (searches still use the serving one).
 */
export function kbProgressStatus(
  kb: KnowledgeBase,
  done: number,
  total: number,
  now: Date,
  sets?: RunVectorSets,
  pages?: number,
  refresh?: KnowledgeBaseStatus["refresh"],
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
      message: `collection ${sets?.collection ?? st.collection ?? knowledgeIdOf(kb)}`,
    },
    { type: "Ingested", status: "Unknown", reason: "Refreshing", message: `${done}/${total} sources processed` },
  ];
  return compact({
    ...st,
    knowledgeId: knowledgeIdOf(kb),
    conditions: setConditions(st.conditions, wanted, st.observedGeneration, now),
    progress: progressText(done, total, pages),
    // The serving vector set as this run's ensure found it: its model and layout go together (a
    // switch made by the previous run changed both).
    ...(sets?.model ? { servingModel: sets.model } : {}),
    ...(sets?.collection ? { collection: sets.collection } : {}),
    ...(sets?.vectors ? { vectors: sets.vectors } : {}),
    ...(sets ? { building: sets.building } : {}),
    ...(refresh ? { refresh } : {}),
  });
}

/**
 * Between refreshes: the counts search has now (documents uploaded through the public API add and
 * remove some) and the vector sets of the same read (model, collection and vectors together,
 * never one of them from an older read), everything else as it was. The same object when nothing
 * changed.
 */
export function kbCountsStatus(kb: KnowledgeBase, info: KnowledgeBaseInfo): KnowledgeBaseStatus {
  const st = kb.status ?? {};
  const sets = info.collection
    ? { servingModel: info.model, collection: info.collection, vectors: info.vectors, building: info.building }
    : {};
  return compact({ ...st, ...sets, documents: info.documents, chunks: info.chunks, uploaded: info.uploaded });
}

/** Chunks that came from the KnowledgeBase's sources (all of them less the uploaded ones). */
export function sourceChunks(c: { chunks?: number | undefined; uploaded?: { chunks: number } | undefined }): number {
  return (c.chunks ?? 0) - (c.uploaded?.chunks ?? 0);
}
