// One refresh of a KnowledgeBase's sources into search, the one ingestion path: the operator runs
// it as a background job (refresh-jobs.ts) and standalone mode runs it at start
// (scripts/standalone/ingest.ts). Each source's documents (inline text, ConfigMap keys, a page,
// a crawl's pages) are written through the documents API stamped with the source's id, origin,
// fetch time and the refresh's id, as the source brings them: a crawl's pages are written while
// the crawl goes on (write-queue.ts: a few writes at once, a bounded buffer, and the crawl's
// results read no further while it is full), so the operator holds a bounded number of pages
// whatever the crawl's size. Search skips the embedding of what it already holds unchanged
// (content hash) and only moves its stamps. The refresh ends with one prune in search: documents
// of sources gone from the spec, and of complete sources, the pages this refresh did not write or
// confirm. A crawl that could not fetch some of its pages (a render timed out, the site dropped a
// connection) is not complete: the pages it has are written, the others keep their documents (no
// prune of that source), and the source is reported failed (CrawlIncomplete), so the status does
// not call it ingested and it is retried. Search holds the documents; nothing here keeps a list of them. A refresh run again
// under the same id (an operator restarted half-way, search restarted) ends the same: what was
// written is confirmed without embedding, and the prune keys on the id.
import type { KnowledgeBase } from "@capstan/shared/api";
import type { CrawlRequest } from "@capstan/shared/clients/scraper-client";
import type { CrawledPage } from "@capstan/shared/clients/scraper-crawl";
import { SearchApiError, type UpsertResult } from "@capstan/shared/clients/search-client";
import { OperatorError } from "../errors.ts";
import { docsIdFor, sourceIdOf } from "../translate/knowledge-base.ts";
import type { Scrape, ScrapeTarget } from "./scrape.ts";
import type { DocumentInput, KnowledgeBaseRef, SearchDocuments } from "./search-documents.ts";
import { WriteQueue } from "./write-queue.ts";

type Spec = KnowledgeBase["spec"];
type Source = Spec["sources"][number];

export const SEARCH_UNAVAILABLE = "SearchUnavailable";
const SOURCE_CONCURRENCY = 4;
/** Each source's writes to search at once, and the documents it holds at most (waiting and being written). */
const WRITE_CONCURRENCY = 4;
const WRITE_BUFFER = 64;
/** How long one document's write waits for search to come back (a restart) before its source fails. */
const SEARCH_PATIENCE_MS = 120_000;

export interface RefreshDeps {
  search: SearchDocuments;
  scrape: Scrape;
  /** Where URL and crawl sources are fetched through (asked once, when one needs it). */
  target: () => Promise<ScrapeTarget>;
  /** A ConfigMap's data in the KnowledgeBase's namespace; undefined when it does not exist. */
  configMap: (name: string) => Promise<Record<string, string> | undefined>;
  now: () => Date;
  sleep?: (ms: number) => Promise<void>;
}

export interface RefreshRun {
  ref: KnowledgeBaseRef;
  spec: Spec;
  /** The refresh's id: every document written or confirmed is stamped with it. */
  refresh: string;
  /** After a model change: the model whose vector set is being built (switched to when complete). */
  buildingModel?: string | undefined;
  /** Document ids of a KnowledgeBase from before documents carried their source (its old annotation). */
  legacy?: string[];
  signal?: AbortSignal;
  /** Sources done, pages crawled and documents written so far (the caller bounds how often it writes them). */
  onProgress?: (p: { sourcesDone: number; crawledPages: number; written: number }) => void;
}

export interface RefreshOutcome {
  sources: number;
  failed: { source: string; reason: string; message: string }[];
  /**
   * Documents written (a crawl's page reached twice is written twice, to its one document), of
   * them those embedded (the rest were unchanged), and chunks embedded.
   */
  documents: number;
  embedded: number;
  embeddedChunks: number;
  crawledPages: number;
  /** Documents the closing prune deleted; undefined when it did not run (an incomplete build). */
  pruned?: number | undefined;
}

interface Doc {
  docsId: string;
  body: DocumentInput;
}

/** Why a source failed, for status: the operator's reason, SearchUnavailable, or IngestionFailed. */
export function failureReason(err: unknown): string {
  if (err instanceof OperatorError) return err.reason;
  if (err instanceof SearchApiError && err.retryable) return SEARCH_UNAVAILABLE;
  return "IngestionFailed";
}

/**
 * Search itself is away (restarting, not ready yet): no answer at all, its own "not ready", or a
 * 502/503 without search's error code (a proxy in front). Worth waiting for. Search answering that
 * its embedding provider or vector store is down is not: the source fails at once, keeps its
 * documents and is retried with the reconcile's backoff.
 */
function searchAway(err: unknown): boolean {
  if (!(err instanceof SearchApiError)) return false;
  if (err.status === 0 || err.code === "SEARCH_ERR_NOT_READY") return true;
  return err.code === undefined && (err.status === 502 || err.status === 503);
}

/** A refresh id: the time it began, and randomness against two beginning at once. */
export function newRefreshId(now: Date): string {
  return `r${now.getTime().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
}

/** Hands a document to the source's write queue; resolves when there is room for the next. */
type Emit = (doc: Doc) => Promise<void>;

/**
 * Emits one source's documents, each keyed by a stable id so a refresh replaces instead of adding.
 * `incomplete`: the source's documents are not all there (a crawl that could not fetch some pages):
 * the ones emitted are written, and the source is neither reported ingested nor pruned.
 */
async function emitDocuments(
  d: RefreshDeps,
  run: RefreshRun,
  source: Source,
  emit: Emit,
  onPages: (n: number) => void,
): Promise<{ incomplete?: OperatorError }> {
  const stamp = { source: sourceIdOf(source), refresh: run.refresh, fetchedAt: d.now().toISOString() };
  if (source.text !== undefined) {
    const body = { docsName: source.name, text: source.text, metadata: { source: "inline" }, ...stamp };
    await emit({ docsId: docsIdFor(source.name, "text"), body });
    return {};
  }
  if (source.configMap) {
    const cmName = source.configMap.name;
    const data = await d.configMap(cmName);
    if (!data) throw new OperatorError("CONFIG_MAP_NOT_FOUND", { name: cmName });
    const keys = source.configMap.keys ?? Object.keys(data).sort();
    const docs = keys.map((key) => {
      const text = data[key];
      if (text === undefined) throw new OperatorError("CONFIG_MAP_KEY_NOT_FOUND", { name: cmName, key });
      const metadata = { source: `configmap:${cmName}/${key}` };
      return {
        docsId: docsIdFor(source.name, "configMap", key),
        body: { docsName: `${source.name}/${key}`, text, metadata, ...stamp },
      };
    });
    for (const doc of docs) await emit(doc);
    return {};
  }
  const options = {
    ...(run.spec.scrapeOptions?.waitFor !== undefined ? { waitFor: run.spec.scrapeOptions.waitFor } : {}),
    onlyMainContent: run.spec.scrapeOptions?.onlyMainContent ?? true,
  };
  if (source.crawl) return crawlDocuments(d, { ...source, crawl: source.crawl }, stamp, options, emit, onPages);
  const url = source.url as string;
  const page = await d.scrape.scrape(await d.target(), url, options);
  const metadata = { source: url, ...(page.title ? { title: page.title } : {}) };
  await emit({
    docsId: docsIdFor(source.name, "url"),
    body: { docsName: source.name, text: page.markdown, metadata, ...stamp, origin: url },
  });
  return {};
}

/**
 * A crawl source's documents, emitted as the crawl's polls bring its pages (the next poll waits
 * while the write queue is full): one per page URL, its id stable per URL, so a page reached twice
 * (e.g. through a redirect) is written twice to one document and the last wins. Incomplete when
 * the crawl could not fetch some pages.
 */
async function crawlDocuments(
  d: RefreshDeps,
  source: Source & { crawl: NonNullable<Source["crawl"]> },
  stamp: { source: string; refresh: string; fetchedAt: string },
  options: { waitFor?: number; onlyMainContent: boolean },
  emit: Emit,
  onPages: (n: number) => void,
): Promise<{ incomplete?: OperatorError }> {
  const { url: start, limit, maxDepth, includePaths, excludePaths } = source.crawl;
  const request: CrawlRequest = {
    url: start,
    limit,
    ...(maxDepth !== undefined ? { maxDepth } : {}),
    ...(includePaths ? { includePaths } : {}),
    ...(excludePaths ? { excludePaths } : {}),
    scrapeOptions: { ...options, formats: ["markdown"] },
  };
  const target = await d.target();
  const take = async (pages: CrawledPage[]) => {
    for (const p of pages) {
      await emit({
        docsId: docsIdFor(source.name, "crawl", p.url),
        body: {
          docsName: `${source.name}/${p.url}`,
          text: p.markdown,
          metadata: { source: p.url, crawl: start, ...(p.title ? { title: p.title } : {}) },
          ...stamp,
          origin: p.url,
        },
      });
    }
  };
  const crawl = await d.scrape.crawl(target, request, { onPages, take });
  if (crawl.failed === 0) return {};
  const params = { failed: crawl.failed, attempted: crawl.attempted, url: start, via: target.via };
  return { incomplete: new OperatorError("CRAWL_INCOMPLETE", params) };
}

/**
 * p, or the abort's reason as soon as the signal fires. A crawl does not wait for it: its next
 * write sees the signal and fails, and the crawl is then given up (cancelled on the scraper).
 */
function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** Writes one document, waiting (with jittered backoff) through a search restart for up to SEARCH_PATIENCE_MS. */
async function write(d: RefreshDeps, run: RefreshRun, doc: Doc) {
  const sleep = d.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = Date.now() + SEARCH_PATIENCE_MS;
  for (let attempt = 0; ; attempt++) {
    run.signal?.throwIfAborted();
    try {
      return await d.search.upsertDocument(run.ref, doc.docsId, doc.body);
    } catch (err) {
      if (!searchAway(err) || Date.now() >= deadline) throw err;
      await sleep(Math.random() * Math.min(10_000, 500 * 2 ** attempt));
    }
  }
}

/**
 * One source: its documents written as they come, through a write queue of its own (bounded
 * concurrency and buffer); resolves once every one is written. The documents emitted before a
 * failure (a crawl given up half-way) are written too: they are the pages' current text.
 */
async function ingestSource(
  d: RefreshDeps,
  run: RefreshRun,
  source: Source,
  onPages: (n: number) => void,
  onWritten: (r: UpsertResult) => void,
): Promise<{ incomplete?: OperatorError }> {
  const queue = new WriteQueue<Doc>({
    write: (doc) => write(d, run, doc),
    onWritten,
    concurrency: WRITE_CONCURRENCY,
    capacity: WRITE_BUFFER,
  });
  let result: { incomplete?: OperatorError };
  try {
    result = await emitDocuments(d, run, source, (doc) => queue.push(doc), onPages);
  } catch (err) {
    await queue.drain().catch(() => undefined);
    throw err;
  }
  await queue.drain();
  return result;
}

/** Runs one refresh to its end; an abort (the operator stopping) rejects with the signal's reason. */
export async function runRefresh(d: RefreshDeps, run: RefreshRun): Promise<RefreshOutcome> {
  const sources = run.spec.sources;
  const out: RefreshOutcome = {
    sources: sources.length,
    failed: [],
    documents: 0,
    embedded: 0,
    embeddedChunks: 0,
    crawledPages: 0,
  };
  const complete: string[] = [];
  const pages = new Map<string, number>();
  let done = 0;
  const progress = () => {
    out.crawledPages = [...pages.values()].reduce((a, b) => a + b, 0);
    run.onProgress?.({ sourcesDone: done, crawledPages: out.crawledPages, written: out.documents });
  };
  const written = (r: UpsertResult) => {
    out.documents += 1;
    if (r.embedded !== false) {
      out.embedded += 1;
      out.embeddedChunks += r.chunks;
    }
    progress();
  };
  let next = 0;
  const worker = async () => {
    while (next < sources.length) {
      const source = sources[next++] as Source;
      const sourceId = sourceIdOf(source);
      try {
        const onPages = (n: number) => {
          pages.set(sourceId, n);
          progress();
        };
        const { incomplete } = await abortable(ingestSource(d, run, source, onPages, written), run.signal);
        // An incomplete source keeps what it did not bring (no prune of it) and is reported failed.
        if (incomplete) throw incomplete;
        complete.push(sourceId);
      } catch (err) {
        if (run.signal?.aborted) throw run.signal.reason;
        out.failed.push({ source: source.name, reason: failureReason(err), message: (err as Error).message });
      }
      done++;
      progress();
    }
  };
  await Promise.all(Array.from({ length: Math.min(SOURCE_CONCURRENCY, sources.length) }, worker));
  run.signal?.throwIfAborted();
  // A new model's vector set missing a source is not pruned (deletes reach the serving one too)
  // nor switched to: the next refresh builds on.
  if (run.buildingModel !== undefined && out.failed.length > 0) return out;
  try {
    const legacy = out.failed.length === 0 ? (run.legacy ?? []) : [];
    const sourceIds = sources.map(sourceIdOf);
    out.pruned = (
      await d.search.pruneDocuments(run.ref, { refresh: run.refresh, sources: sourceIds, complete, legacy })
    ).deleted;
    if (run.buildingModel !== undefined) {
      await d.search.carryUploads?.(run.ref, run.buildingModel);
      await d.search.switchKnowledgeBase?.(run.ref, run.buildingModel);
    }
  } catch (err) {
    // Reported like a failed source: retried with backoff, the documents kept meanwhile.
    const what = run.buildingModel !== undefined ? `(switch to ${run.buildingModel})` : "(prune)";
    const reason = failureReason(err) === SEARCH_UNAVAILABLE ? SEARCH_UNAVAILABLE : "SwitchFailed";
    out.failed.push({ source: what, reason, message: (err as Error).message });
  }
  return out;
}
