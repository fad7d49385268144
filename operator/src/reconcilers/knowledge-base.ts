// KnowledgeBase: a finalizer guards the vector collection (deleted through the search service
// before the object goes); the collection is ensured; sources (inline text, ConfigMap keys, URLs
// and crawls through the referenced Scraper or the platform scraping settings) are refreshed when
// the spec changes and every refreshInterval. A refresh is a job beside the reconcile
// (ingest/refresh-jobs.ts running ingest/refresh.ts): the reconcile starts it (its id in
// status.refresh) and returns; the job writes progress at a bounded rate; when it ends, the next
// reconcile reads search once and writes the status once. An operator that restarts (or a new
// leader) finds status.refresh and resumes the refresh under the same id. Search holds the
// documents, each stamped with its source and the refresh that wrote or confirmed it; a refresh
// ends with one prune there, so no list of documents is kept here. A model change is built
// beside the serving vector set and switched to only once every source is in. A source that
// fails keeps its previous documents and is retried with backoff. A knowledge base is its
// namespace and id: a second KnowledgeBase of the namespace claiming the same id is refused
// (DuplicateKnowledgeId) and never touches the owner's vectors.
import type { KnowledgeBase, Scraper } from "@capstan/shared/api";
import { knowledgeIdOf, ownerFirst } from "@capstan/shared/api";
import { CONFIG_MAP, type KubeObject } from "@capstan/shared/kube";
import { platformScraperUrl, platformScraperVia } from "../config.ts";
import { findCondition, kubeTime } from "../controller/conditions.ts";
import type { Reconcile, Result } from "../controller/controller.ts";
import { OperatorError } from "../errors.ts";
import { newRefreshId, type RefreshOutcome, runRefresh } from "../ingest/refresh.ts";
import type { FinishedRefresh } from "../ingest/refresh-jobs.ts";
import type { ScrapeTarget } from "../ingest/scrape.ts";
import type { KnowledgeBaseInfo } from "../ingest/search-documents.ts";
import {
  DOCUMENTS_ANNOTATION,
  FAILING_SINCE_ANNOTATION,
  type IngestionReport,
  KB_FINALIZER,
  kbCountsStatus,
  kbDuplicateStatus,
  kbProgressStatus,
  kbSettings,
  kbStatus,
  kbUnavailableStatus,
  legacyDocuments,
  type RunVectorSets,
  refreshDueIn,
  sourceChunks,
} from "../translate/knowledge-base.ts";
import { scraperApiKeyRef, scraperEndpoint } from "../translate/scraper.ts";
import { REQUEUE_SLACK_MS } from "./access-channel.ts";
import { KNOWLEDGE_BASE, type OperatorContext } from "./context.ts";
import { suppliedKey } from "./key-secret.ts";
import { ProgressWriter } from "./knowledge-base-progress.ts";
import { kbRef, needsRefill, SEARCH_UNAVAILABLE } from "./knowledge-base-refill.ts";
import { KB_BY_ID, kbIndexKey } from "./search-key.ts";
import { writeStatus } from "./status.ts";

type KB = KnowledgeBase & KubeObject;

async function scrapeTarget(ctx: OperatorContext, kb: KB): Promise<ScrapeTarget> {
  const ref = kb.spec.scraperRef;
  if (!ref) {
    const s = ctx.config.scraping;
    if (!s.enabled) throw new OperatorError("SCRAPING_DISABLED", { name: "the platform" });
    const url = platformScraperUrl(ctx.config);
    const via = platformScraperVia(ctx.config);
    return { url, timeoutSeconds: s.timeout, maxRetries: s.max_retries, apiKey: s.api_key, via };
  }
  const scraper = ctx.informers.scrapers.get(kb.metadata.namespace as string, ref.name) as Scraper | undefined;
  if (!scraper) throw new OperatorError("SCRAPER_NOT_FOUND", { name: ref.name });
  if (!scraper.spec.client.enabled) throw new OperatorError("SCRAPING_DISABLED", { name: `Scraper ${ref.name}` });
  const keyRef = scraperApiKeyRef(scraper);
  const key = keyRef ? await suppliedKey(ctx.client, kb.metadata.namespace as string, keyRef) : undefined;
  const url = scraperEndpoint(scraper);
  return {
    url,
    via: `Scraper ${kb.metadata.namespace}/${ref.name} (${url})`,
    timeoutSeconds: scraper.spec.client.timeoutSeconds,
    maxRetries: scraper.spec.client.maxRetries,
    apiKey: key?.ok ? key.value : undefined,
  };
}

/** The KnowledgeBase of this namespace that owns kb's knowledgeId (ownerFirst: the one holding it, else the oldest). */
export function ownerOf(ctx: OperatorContext, kb: KB): KB | undefined {
  const claimants = ctx.informers.knowledgeBases.byIndex(
    KB_BY_ID,
    kbIndexKey(kb.metadata.namespace, knowledgeIdOf(kb)),
  ) as KB[];
  return [...claimants].filter((k) => !k.metadata.deletionTimestamp || k === kb).sort(ownerFirst)[0];
}

async function finalize(ctx: OperatorContext, kb: KB): Promise<void> {
  if (!kb.metadata.finalizers?.includes(KB_FINALIZER)) return;
  // A duplicate never had vectors of its own: the owner's stay.
  const owner = ownerOf(ctx, kb);
  if (!owner || owner.metadata.uid === kb.metadata.uid) await ctx.search.deleteKnowledgeBase(kbRef(kb));
  await ctx.client.mergePatch(KNOWLEDGE_BASE, kb.metadata.namespace as string, kb.metadata.name, {
    metadata: {
      resourceVersion: kb.metadata.resourceVersion,
      finalizers: kb.metadata.finalizers.filter((f) => f !== KB_FINALIZER),
    },
  });
  ctx.events.record(
    kb,
    "Normal",
    "CollectionDeleted",
    "Finalize",
    `knowledge base ${knowledgeIdOf(kb)} removed from search`,
  );
}

/** Starts (or resumes, under status.refresh's id) the refresh job of kb; its progress status written first. */
async function startRefresh(ctx: OperatorContext, kb: KB, key: string): Promise<Result> {
  const now = ctx.now();
  const id = kbRef(kb);
  let sets: RunVectorSets | undefined;
  try {
    const info = (await ctx.search.ensureKnowledgeBase(id, kbSettings(kb))) as KnowledgeBaseInfo | undefined;
    sets = info && { model: info.model, building: info.building, collection: info.collection, vectors: info.vectors };
  } catch (err) {
    const reason = err instanceof OperatorError ? err.reason : "SearchUnavailable";
    ctx.logger.warn({ kb: key, err: (err as Error).message }, "knowledge base not ensured");
    await writeStatus(ctx.client, KNOWLEDGE_BASE, kb, kbUnavailableStatus(kb, reason, (err as Error).message, now));
    return { requeue: true };
  }
  const refresh = kb.status?.refresh ?? { name: newRefreshId(now), startedAt: kubeTime(now) };
  const progress = kbProgressStatus(kb, 0, kb.spec.sources.length, now, sets, undefined, refresh);
  await writeStatus(ctx.client, KNOWLEDGE_BASE, kb, progress);
  const started = { ...kb, status: progress };
  const writer = new ProgressWriter(ctx, started, sets, refresh);
  ctx.metrics.ingestsInFlight.inc();
  if (kb.status?.refresh) ctx.logger.info({ kb: key, refresh: refresh.name }, "refresh resumed");
  ctx.refreshes.start(key, refresh.name, { generation: kb.metadata.generation }, (signal) =>
    runRefresh(
      {
        search: ctx.search,
        scrape: ctx.scrape,
        target: lazy(() => scrapeTarget(ctx, kb)),
        configMap: async (name) => {
          const cm = await ctx.client.get<KubeObject & { data?: Record<string, string> }>(
            CONFIG_MAP,
            kb.metadata.namespace as string,
            name,
          );
          return cm ? (cm.data ?? {}) : undefined;
        },
        now: ctx.now,
      },
      {
        ref: id,
        spec: kb.spec,
        refresh: refresh.name,
        buildingModel: sets?.building?.model,
        legacy: legacyDocuments(kb.metadata.annotations?.[DOCUMENTS_ANNOTATION]),
        signal,
        onProgress: (p) => writer.update(p.sourcesDone, p.crawledPages, p.written),
      },
    ).finally(async () => {
      await writer.close();
      ctx.metrics.ingestsInFlight.dec();
    }),
  );
  // The job's end enqueues the KnowledgeBase; this is only a safety net.
  return { requeueAfterMs: ctx.config.knowledgeBaseCountsSeconds * 1000 + REQUEUE_SLACK_MS };
}

function lazy<T>(f: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | undefined;
  return () => (p ??= f());
}

/**
 * A refresh job ended: one read of search (counts and the vector set serving now, switched or
 * not), one status write, the failing-since annotation, and the legacy documents annotation of
 * KnowledgeBases from before search held the documents dropped once a complete refresh pruned it.
 */
async function finishRefresh(ctx: OperatorContext, kb: KB, job: FinishedRefresh): Promise<Result> {
  const key = `${kb.metadata.namespace}/${kb.metadata.name}`;
  const outcome = job.outcome as RefreshOutcome;
  const counts = await ctx.search.getKnowledgeBase(kbRef(kb));
  const report: IngestionReport = {
    sources: outcome.sources,
    failed: outcome.failed,
    documents: counts?.documents ?? 0,
    chunks: counts?.chunks ?? 0,
    ...(counts?.collection ? { collection: counts.collection } : {}),
    ...(counts?.vectors ? { vectors: counts.vectors } : {}),
    servingModel: counts?.model,
    building: counts?.building,
    uploaded: counts?.uploaded,
    crawledPages: outcome.crawledPages,
  };
  recordIngestion(ctx, report);
  ctx.logger.info(
    { kb: key, refresh: job.refresh, documents: outcome.documents, embedded: outcome.embedded, pruned: outcome.pruned },
    "refresh ended",
  );
  const finished = ctx.now();
  const annotations = kb.metadata.annotations ?? {};
  const failingSince = report.failed.length > 0 ? (annotations[FAILING_SINCE_ANNOTATION] ?? kubeTime(finished)) : null;
  const legacy = annotations[DOCUMENTS_ANNOTATION] !== undefined && report.failed.length === 0;
  let current = kb;
  if (legacy || (annotations[FAILING_SINCE_ANNOTATION] ?? null) !== failingSince) {
    current = await ctx.client.mergePatch<KB>(KNOWLEDGE_BASE, kb.metadata.namespace as string, kb.metadata.name, {
      metadata: {
        annotations: { [FAILING_SINCE_ANNOTATION]: failingSince, ...(legacy ? { [DOCUMENTS_ANNOTATION]: null } : {}) },
      },
    });
  }
  // The status observes the metadata.generation the refresh began with: a spec changed meanwhile is refreshed next.
  const observed = { ...current, metadata: { ...current.metadata, generation: job.started.generation } };
  const status = kbStatus(observed, report, finished);
  const before = findCondition(kb.status?.conditions, "Ready");
  await writeStatus(ctx.client, KNOWLEDGE_BASE, current, status);
  const ready = status.conditions?.[0];
  if (ready && ready.status !== before?.status) {
    ctx.events.record(kb, ready.status === "True" ? "Normal" : "Warning", ready.reason, "Ingest", ready.message);
  }
  // The search service or its store was down for some sources: again with backoff, not in 24 h.
  if (report.failed.some((f) => f.reason === SEARCH_UNAVAILABLE)) return { requeue: true };
  // A new model's vector set that is not complete is built again with backoff, not in 24 h.
  if (report.building) return { requeue: true };
  // Back for the counts (syncCounts) before the next refresh when that is further away.
  const next = Math.min(refreshDueIn({ ...current, status }, finished), ctx.config.knowledgeBaseCountsSeconds * 1000);
  return { requeueAfterMs: next + REQUEUE_SLACK_MS };
}

export function knowledgeBaseReconciler(ctx: OperatorContext): Reconcile {
  return async ({ namespace, name }) => {
    let kb = ctx.informers.knowledgeBases.get(namespace, name) as KB | undefined;
    if (!kb) return undefined;
    if (kb.metadata.deletionTimestamp) {
      await finalize(ctx, kb);
      return undefined;
    }
    if (!kb.metadata.finalizers?.includes(KB_FINALIZER)) {
      kb = await ctx.client.mergePatch<KB>(KNOWLEDGE_BASE, namespace, name, {
        metadata: {
          resourceVersion: kb.metadata.resourceVersion,
          finalizers: [...(kb.metadata.finalizers ?? []), KB_FINALIZER],
        },
      });
    }
    const now = ctx.now();
    const owner = ownerOf(ctx, kb);
    if (owner && owner.metadata.uid !== kb.metadata.uid) {
      const before = findCondition(kb.status?.conditions, "Ready");
      const status = kbDuplicateStatus(kb, owner.metadata.name, now);
      await writeStatus(ctx.client, KNOWLEDGE_BASE, kb, status);
      const ready = status.conditions?.[0];
      if (ready && before?.reason !== ready.reason) {
        ctx.events.record(kb, "Warning", ready.reason, "Reconcile", ready.message);
      }
      return undefined; // the owner's deletion or a spec change enqueues it again
    }
    const key = `${namespace}/${name}`;
    if (ctx.refreshes.running(key)) return { requeueAfterMs: ctx.config.knowledgeBaseCountsSeconds * 1000 };
    const job = ctx.refreshes.take(key);
    if (job?.outcome) return finishRefresh(ctx, kb, job);
    if (job?.error) {
      // Resumed under its id after the controller's backoff.
      ctx.logger.warn({ kb: key, refresh: job.refresh, err: job.error.message }, "refresh stopped");
      return { requeue: true };
    }
    // A refresh begun and not finished (here, or by the operator before a restart): resumed.
    if (!kb.status?.refresh) {
      const dueIn = refreshDueIn(kb, now);
      if (dueIn > 0 && !(await needsRefill(ctx, kb))) return syncCounts(ctx, kb, dueIn);
    }
    return startRefresh(ctx, kb, key);
  };
}

/**
 * Between refreshes, documents uploaded through search's public documents API change the counts:
 * they are read again every knowledgeBaseCountsSeconds and written to status when they moved.
 */
async function syncCounts(ctx: OperatorContext, kb: KB, dueIn: number): Promise<Result> {
  try {
    const info = await ctx.search.getKnowledgeBase(kbRef(kb));
    // Vectors of the sources vanished since needsRefill looked (a collection deleted by hand):
    // the status keeps the counts needsRefill compares with, and the next reconcile refills.
    if (info && sourceChunks(info) < sourceChunks(kb.status ?? {})) return { requeue: true };
    if (info) await writeStatus(ctx.client, KNOWLEDGE_BASE, kb, kbCountsStatus(kb, info));
  } catch (err) {
    // Search is down: the counts stay as they were; the next refresh reports it.
    ctx.logger.debug(
      { kb: `${kb.metadata.namespace}/${kb.metadata.name}`, err: (err as Error).message },
      "counts not read",
    );
  }
  return { requeueAfterMs: Math.min(dueIn, ctx.config.knowledgeBaseCountsSeconds * 1000) + REQUEUE_SLACK_MS };
}

function recordIngestion(ctx: OperatorContext, report: IngestionReport): void {
  const failed = report.failed.length;
  const result = failed === 0 ? "ok" : failed === report.sources ? "failed" : "partial";
  ctx.metrics.ingestRuns.inc({ result });
  ctx.metrics.ingestSources.inc({ outcome: "ingested" }, report.sources - failed);
  ctx.metrics.ingestSources.inc({ outcome: "failed" }, failed);
  ctx.metrics.ingestDocuments.inc(report.documents);
}
