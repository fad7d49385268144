// A crawl to its end, as KnowledgeBase crawl sources need it (the operator's reconciler and the
// standalone launcher): one crawl job on the scraper (POST /crawl), polled
// (GET /crawl/{id}?skip=<pages read>) until it ends, every result read once as it arrives, and
// cancelled (DELETE /crawl/{id}) when the operator gives up on it. With `take`, each poll's pages
// are handed over as they arrive instead of collected (the operator writes them to search while
// the crawl goes on), and the next poll waits until take has accepted them: a caller whose buffer
// is full stops the reading (backpressure; the scraper keeps the results meanwhile), so the memory
// held is one poll's answer plus the caller's buffer, whatever the crawl's size. Each call goes
// through the ScraperClient's resilience policy (timeout, bounded full-jitter retries, the outbound
// metric);
// between polls the wait grows from POLL_MIN_MS to POLL_MAX_MS with full jitter, and the whole
// crawl is bounded by maxWaitMs. A poll that finds the scraper away (a replica restarting: the
// job itself lives in Redis and goes on) is asked again with the same backoff, for up to
// awayMs in a row. Pages that answered 4xx/5xx are results on the scraper but not
// documents; pages the scraper could not fetch at all (a render that timed out, a connection the
// site dropped) are not results either: they are counted (`failed`), so the caller knows the crawl
// is incomplete and does not take a missing page for a page gone from the site. A crawl that
// failed, was cancelled or fetched no page at all is an error (a KnowledgeBase keeps the source's
// previous documents).
import { type CrawlRequest, type CrawlStatus, scraperAway } from "./scraper-client.ts";

/** The calls of the scraper's crawl API this needs (ScraperClient has them). */
export interface CrawlApi {
  startCrawl(request: CrawlRequest, signal?: AbortSignal): Promise<{ id: string }>;
  crawlStatus(id: string, skip?: number, signal?: AbortSignal): Promise<CrawlStatus>;
  cancelCrawl(id: string, signal?: AbortSignal): Promise<void>;
}

export interface CrawledPage {
  /** The page's URL as the crawl found it (sourceURL), the key of its document. */
  url: string;
  markdown: string;
  title?: string;
}

export interface CrawlOptions {
  /** The whole crawl, start to last result (default 30 minutes). */
  maxWaitMs?: number;
  /** Told the pages read so far after every poll that brought some. */
  onPages?: (pages: number) => void;
  /**
   * Takes each poll's pages, in the order they finished; the crawl reads no further results until
   * the promise resolves, and its rejection gives the crawl up (cancelled) with that error. Without
   * it the pages are collected into the result.
   */
  take?: (pages: CrawledPage[]) => Promise<void>;
  /** How long polls may find the scraper away in a row before the crawl is given up (default 2 minutes). */
  awayMs?: number;
  /** Test seam for the waits between polls. */
  sleep?: (ms: number) => Promise<void>;
}

export const POLL_MIN_MS = 250;
export const POLL_MAX_MS = 5_000;
const DEFAULT_MAX_WAIT_MS = 30 * 60_000;
const DEFAULT_AWAY_MS = 120_000;

/** A crawl's end: the pages worth a document, and how many pages it could not fetch at all. */
export interface CrawlResult {
  /** The pages, when no `take` was given (with one, they were handed over and this is empty). */
  pages: CrawledPage[];
  /** How many pages worth a document the crawl brought (a page reached twice counts twice). */
  found: number;
  /** Pages the scraper failed to fetch (its job's `failed` count); their content is unknown. */
  failed: number;
  /** Pages the crawl answered for: results (documents or 4xx/5xx) and failures. */
  attempted: number;
}

/** Why a crawl did not give its pages; the caller wraps it in its own error with the start URL. */
export class CrawlError extends Error {}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Wait before poll n (0-based) with nothing new: full jitter over an exponential ceiling. */
export function pollDelay(n: number, random: () => number = Math.random): number {
  const ceiling = Math.min(POLL_MAX_MS, POLL_MIN_MS * 2 ** Math.min(n, 16));
  return Math.max(POLL_MIN_MS / 2, Math.floor(random() * ceiling));
}

/** The results of one poll worth a document: not 4xx/5xx answers, not results without a URL. */
function documentPages(data: CrawlStatus["data"]): CrawledPage[] {
  const pages: CrawledPage[] = [];
  for (const p of data) {
    const status = p.metadata?.statusCode;
    if (typeof status === "number" && status >= 400) continue;
    const url = String(p.metadata?.sourceURL || p.metadata?.url || "");
    if (!url) continue;
    pages.push({ url, markdown: p.markdown ?? "", ...(p.metadata?.title ? { title: p.metadata.title } : {}) });
  }
  return pages;
}

/** Runs one crawl to its end: the pages worth a document, in the order they finished, and the count of failed ones. */
export async function crawlPages(api: CrawlApi, request: CrawlRequest, opts: CrawlOptions = {}): Promise<CrawlResult> {
  const sleep = opts.sleep ?? realSleep;
  let deadline = Date.now() + (opts.maxWaitMs ?? DEFAULT_MAX_WAIT_MS);
  const { id } = await api.startCrawl(request);
  const pages: CrawledPage[] = [];
  let found = 0;
  let read = 0;
  let failed = 0;
  let idle = 0;
  let finished = false;
  let awaySince: number | undefined;
  try {
    for (;;) {
      let st: CrawlStatus;
      try {
        st = await api.crawlStatus(id, read);
        awaySince = undefined;
      } catch (err) {
        awaySince ??= Date.now();
        const patience = Math.min(deadline, awaySince + (opts.awayMs ?? DEFAULT_AWAY_MS));
        if (!scraperAway(err) || Date.now() >= patience) throw err;
        idle++;
        await sleep(Math.min(pollDelay(idle), Math.max(0, patience - Date.now())));
        continue;
      }
      read += st.data.length;
      failed = st.failed ?? 0;
      const brought = documentPages(st.data);
      found += brought.length;
      if (st.data.length > 0) opts.onPages?.(found);
      if (opts.take && brought.length > 0) {
        // The time the caller takes to accept the pages is its own, not the crawl's: the bound
        // moves by it (the scraper holds the results until its job expires, SCRAPER_JOB_TTL).
        const began = Date.now();
        await opts.take(brought);
        deadline += Date.now() - began;
      } else if (!opts.take) pages.push(...brought);
      if (st.next) continue; // more results already there: read them at once
      if (st.status !== "scraping") {
        finished = true;
        if (st.status !== "completed")
          throw new CrawlError(`the crawl ${st.status}${st.warning ? `: ${st.warning}` : ""}`);
        break;
      }
      if (Date.now() >= deadline)
        throw new CrawlError(`the crawl did not finish within ${opts.maxWaitMs ?? DEFAULT_MAX_WAIT_MS} ms`);
      idle = st.data.length > 0 ? 0 : idle + 1;
      await sleep(Math.min(pollDelay(idle), Math.max(0, deadline - Date.now())));
    }
  } catch (err) {
    // Giving up on a running job: cancel it so it fetches nothing more (best effort, its own
    // retries; an error here is not the one worth reporting).
    if (!finished) await api.cancelCrawl(id).catch(() => undefined);
    throw err;
  }
  if (found === 0) throw new CrawlError("the crawl found no page (the start URL failed or matched no path)");
  return { pages, found, failed, attempted: read + failed };
}
