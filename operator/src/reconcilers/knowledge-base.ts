// KnowledgeBase: a finalizer guards the vector collection (deleted through the search service
// before the object goes); the collection is ensured; sources (inline text, ConfigMap keys, URLs
// and crawls through the referenced Scraper or the platform scraping settings) are ingested
// through the documents API when the spec changes and every refreshInterval; counts and progress
// in status. A crawl's pages are one document each, keyed by page URL, so a refresh replaces them
// and a page the crawl no longer finds is deleted as stale.
// A model change is built beside the serving generation and switched to only once every source
// is in (see completeBuild), so searches never answer from a half-filled collection. A source
// that fails keeps its previous documents (documentsAfterRun) and is retried with backoff. A
// knowledge base is its namespace and id: a second KnowledgeBase of the namespace claiming the
// same id is refused (DuplicateKnowledgeId) and never touches the owner's vectors.
import type { KnowledgeBase, Scraper } from "@capstan/shared/api";
import { knowledgeIdOf, ownerFirst } from "@capstan/shared/api";
import { CONFIG_MAP, type KubeObject } from "@capstan/shared/kube";
import { platformScraperUrl } from "../config.ts";
import { findCondition, kubeTime } from "../controller/conditions.ts";
import type { Reconcile, Result } from "../controller/controller.ts";
import { OperatorError } from "../errors.ts";
import type { ScrapeTarget } from "../ingest/scrape.ts";
import type { DocumentInput, KnowledgeBaseInfo, KnowledgeBaseRef } from "../ingest/search-documents.ts";
import {
  DOCUMENTS_ANNOTATION,
  docsIdFor,
  documentsAfterRun,
  FAILING_SINCE_ANNOTATION,
  type IngestionReport,
  KB_FINALIZER,
  kbCountsStatus,
  kbDuplicateStatus,
  kbProgressStatus,
  kbSettings,
  kbStatus,
  kbUnavailableStatus,
  type RunGenerations,
  refreshDueIn,
  sourceChunks,
  sourceIdOf,
} from "../translate/knowledge-base.ts";
import { scraperApiKeyRef, scraperEndpoint } from "../translate/scraper.ts";
import { REQUEUE_SLACK_MS } from "./access-channel.ts";
import { KNOWLEDGE_BASE, type OperatorContext } from "./context.ts";
import { suppliedKey } from "./key-secret.ts";
import { ProgressWriter } from "./knowledge-base-progress.ts";
import { kbRef, needsRefill, SEARCH_UNAVAILABLE, searchUnavailable } from "./knowledge-base-refill.ts";
import { KB_BY_ID, kbIndexKey } from "./search-key.ts";
import { writeStatus } from "./status.ts";

type KB = KnowledgeBase & KubeObject;
type Source = KnowledgeBase["spec"]["sources"][number];
interface Doc extends DocumentInput {
  docsId: string;
}

const SOURCE_CONCURRENCY = 4;

async function scrapeTarget(ctx: OperatorContext, kb: KB): Promise<ScrapeTarget> {
  const ref = kb.spec.scraperRef;
  if (!ref) {
    const s = ctx.config.scraping;
    if (!s.enabled) throw new OperatorError("SCRAPING_DISABLED", { name: "the platform" });
    const url = platformScraperUrl(ctx.config);
    return { url, timeoutSeconds: s.timeout, maxRetries: s.max_retries, apiKey: s.api_key };
  }
  const scraper = ctx.informers.scrapers.get(kb.metadata.namespace as string, ref.name) as Scraper | undefined;
  if (!scraper) throw new OperatorError("SCRAPER_NOT_FOUND", { name: ref.name });
  if (!scraper.spec.client.enabled) throw new OperatorError("SCRAPING_DISABLED", { name: `Scraper ${ref.name}` });
  const keyRef = scraperApiKeyRef(scraper);
  const key = keyRef ? await suppliedKey(ctx.client, kb.metadata.namespace as string, keyRef) : undefined;
  return {
    url: scraperEndpoint(scraper),
    timeoutSeconds: scraper.spec.client.timeoutSeconds,
    maxRetries: scraper.spec.client.maxRetries,
    apiKey: key?.ok ? key.value : undefined,
  };
}

async function documentsOf(
  ctx: OperatorContext,
  kb: KB,
  source: Source,
  target: () => Promise<ScrapeTarget>,
  onPages: (pages: number) => void,
): Promise<Doc[]> {
  if (source.text !== undefined) {
    return [
      {
        docsId: docsIdFor(source.name, "text"),
        docsName: source.name,
        text: source.text,
        metadata: { source: "inline" },
      },
    ];
  }
  if (source.configMap) {
    const cmName = source.configMap.name;
    const cm = await ctx.client.get<KubeObject & { data?: Record<string, string> }>(
      CONFIG_MAP,
      kb.metadata.namespace as string,
      cmName,
    );
    if (!cm) throw new OperatorError("CONFIG_MAP_NOT_FOUND", { name: cmName });
    const keys = source.configMap.keys ?? Object.keys(cm.data ?? {}).sort();
    return keys.map((key) => {
      const text = cm.data?.[key];
      if (text === undefined) throw new OperatorError("CONFIG_MAP_KEY_NOT_FOUND", { name: cmName, key });
      return {
        docsId: docsIdFor(source.name, "configMap", key),
        docsName: `${source.name}/${key}`,
        text,
        metadata: { source: `configmap:${cmName}/${key}` },
      };
    });
  }
  const options = {
    ...(kb.spec.scrapeOptions?.waitFor !== undefined ? { waitFor: kb.spec.scrapeOptions.waitFor } : {}),
    onlyMainContent: kb.spec.scrapeOptions?.onlyMainContent ?? true,
  };
  if (source.crawl) {
    const { url: start, limit, maxDepth, includePaths, excludePaths } = source.crawl;
    const pages = await ctx.scrape.crawl(
      await target(),
      {
        url: start,
        limit,
        ...(maxDepth !== undefined ? { maxDepth } : {}),
        ...(includePaths ? { includePaths } : {}),
        ...(excludePaths ? { excludePaths } : {}),
        scrapeOptions: { ...options, formats: ["markdown"] },
      },
      { onPages },
    );
    // One document per page URL (a page reached twice, e.g. through a redirect, once: the last).
    const byUrl = new Map(pages.map((p) => [p.url, p]));
    return [...byUrl.values()].map((p) => ({
      docsId: docsIdFor(source.name, "crawl", p.url),
      docsName: `${source.name}/${p.url}`,
      text: p.markdown,
      metadata: { source: p.url, crawl: start, ...(p.title ? { title: p.title } : {}) },
    }));
  }
  const url = source.url as string;
  const page = await ctx.scrape.scrape(await target(), url, options);
  return [
    {
      docsId: docsIdFor(source.name, "url"),
      docsName: source.name,
      text: page.markdown,
      metadata: { source: url, ...(page.title ? { title: page.title } : {}) },
    },
  ];
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

async function ingest(
  ctx: OperatorContext,
  kb: KB,
  gens: RunGenerations | undefined,
  progress: ProgressWriter,
): Promise<{ report: IngestionReport; documents: string }> {
  const buildingModel = gens?.building?.model;
  const id = kbRef(kb);
  const sources = kb.spec.sources;
  const failed: IngestionReport["failed"] = [];
  const failedIds = new Set<string>();
  const produced = new Map<string, string[]>();
  let target: Promise<ScrapeTarget> | undefined;
  const lazyTarget = () => (target ??= scrapeTarget(ctx, kb));
  let next = 0;
  const worker = async () => {
    while (next < sources.length) {
      const source = sources[next++] as Source;
      const sourceId = sourceIdOf(source);
      const ids: string[] = [];
      produced.set(sourceId, ids); // documents written, also by a source that fails half-way
      try {
        const onPages = (pages: number) => progress.crawled(sourceId, pages);
        for (const doc of await documentsOf(ctx, kb, source, lazyTarget, onPages)) {
          const { docsId, ...body } = doc;
          await ctx.search.upsertDocument(id, docsId, body);
          ids.push(docsId);
        }
      } catch (err) {
        const reason =
          err instanceof OperatorError ? err.reason : searchUnavailable(err) ? SEARCH_UNAVAILABLE : "IngestionFailed";
        failed.push({ source: source.name, reason, message: (err as Error).message });
        failedIds.add(sourceId);
      }
      progress.sourceDone();
    }
  };
  await Promise.all(Array.from({ length: Math.min(SOURCE_CONCURRENCY, sources.length) }, worker));
  // Failed sources keep their documents; only those of sources gone from the spec are deleted.
  const after = documentsAfterRun({
    previous: kb.metadata.annotations?.[DOCUMENTS_ANNOTATION],
    sourceIds: sources.map(sourceIdOf),
    produced,
    failed: failedIds,
    incompleteBuild: buildingModel !== undefined && failed.length > 0,
  });
  for (const d of after.stale) await ctx.search.deleteDocument(id, d);
  if (buildingModel && failed.length === 0) await completeBuild(ctx, id, buildingModel, failed);
  // One read after the run: the counts and the generation serving now (switched or not, also when
  // the switch's answer was lost). Model, collection and vectors all come from it, so the status
  // never names one generation's model beside another's collection; the ensure's layout only
  // when search has none to give.
  const counts = await ctx.search.getKnowledgeBase(id);
  const serving = counts?.collection ? counts : { collection: gens?.collection, vectors: gens?.vectors };
  return {
    report: {
      sources: sources.length,
      failed,
      documents: counts?.documents ?? after.documents.length,
      chunks: counts?.chunks ?? 0,
      ...(serving.collection ? { collection: serving.collection } : {}),
      ...(serving.vectors ? { vectors: serving.vectors } : {}),
      servingModel: counts?.model,
      building: counts?.building,
      uploaded: counts?.uploaded,
      crawledPages: progress.crawledPages,
    },
    documents: after.annotation,
  };
}

/**
 * Every source is in the new model's generation: carry the documents uploaded through search's
 * public API into it (those uploaded before the build; later ones went there already), then make
 * it serve (one atomic switch in the search service; the old generation's vectors are deleted
 * after it). A failed carry or switch is reported like a failed source, so the build is retried
 * (the carry skips what it already copied) and the old generation keeps serving.
 */
async function completeBuild(
  ctx: OperatorContext,
  id: KnowledgeBaseRef,
  model: string,
  failed: IngestionReport["failed"],
): Promise<boolean> {
  try {
    await ctx.search.carryUploads?.(id, model);
    await ctx.search.switchKnowledgeBase?.(id, model);
    return true;
  } catch (err) {
    const reason = searchUnavailable(err) ? SEARCH_UNAVAILABLE : "SwitchFailed";
    failed.push({ source: `(switch to ${model})`, reason, message: (err as Error).message });
    return false;
  }
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
    const dueIn = refreshDueIn(kb, now);
    if (dueIn > 0 && !(await needsRefill(ctx, kb))) return syncCounts(ctx, kb, dueIn);

    const id = kbRef(kb);
    let gens: RunGenerations | undefined;
    try {
      const info = (await ctx.search.ensureKnowledgeBase(id, kbSettings(kb))) as KnowledgeBaseInfo | undefined;
      gens = info && { model: info.model, building: info.building, collection: info.collection, vectors: info.vectors };
    } catch (err) {
      const reason = err instanceof OperatorError ? err.reason : "SearchUnavailable";
      ctx.logger.warn({ kb: `${namespace}/${name}`, err: (err as Error).message }, "knowledge base not ensured");
      await writeStatus(ctx.client, KNOWLEDGE_BASE, kb, kbUnavailableStatus(kb, reason, (err as Error).message, now));
      return { requeue: true };
    }
    const progress = kbProgressStatus(kb, 0, kb.spec.sources.length, now, gens);
    await writeStatus(ctx.client, KNOWLEDGE_BASE, kb, progress);
    ctx.metrics.ingestsInFlight.inc();
    const writer = new ProgressWriter(ctx, kb, gens);
    const { report, documents: joined } = await ingest(ctx, kb, gens, writer)
      .finally(() => writer.close())
      .finally(() => ctx.metrics.ingestsInFlight.dec());
    recordIngestion(ctx, report);
    const finished = ctx.now();
    const annotations = kb.metadata.annotations ?? {};
    // The start of a run of failed refreshes sets how soon the failed sources are tried again.
    const failingSince =
      report.failed.length > 0 ? (annotations[FAILING_SINCE_ANNOTATION] ?? kubeTime(finished)) : null;
    if (
      (annotations[DOCUMENTS_ANNOTATION] ?? "") !== joined ||
      (annotations[FAILING_SINCE_ANNOTATION] ?? null) !== failingSince
    ) {
      kb = await ctx.client.mergePatch<KB>(KNOWLEDGE_BASE, namespace, name, {
        metadata: { annotations: { [DOCUMENTS_ANNOTATION]: joined, [FAILING_SINCE_ANNOTATION]: failingSince } },
      });
    }
    const status = kbStatus(kb, report, finished);
    const before = findCondition(kb.status?.conditions, "Ready");
    await writeStatus(ctx.client, KNOWLEDGE_BASE, { ...kb, status: progress }, status);
    const ready = status.conditions?.[0];
    if (ready && ready.status !== before?.status) {
      ctx.events.record(kb, ready.status === "True" ? "Normal" : "Warning", ready.reason, "Ingest", ready.message);
    }
    // The search service or its store was down for some sources: again with backoff, not in 24 h.
    if (report.failed.some((f) => f.reason === SEARCH_UNAVAILABLE)) return { requeue: true };
    // A new model's generation that is not complete is built again with backoff, not in 24 h.
    if (report.building) return { requeue: true };
    // Back for the counts (syncCounts) before the next refresh when that is further away.
    const next = Math.min(refreshDueIn({ ...kb, status }, finished), ctx.config.knowledgeBaseCountsSeconds * 1000);
    return { requeueAfterMs: next + REQUEUE_SLACK_MS };
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
