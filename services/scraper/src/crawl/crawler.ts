// One crawl, breadth first from the start URL (and the site's sitemap pages): every URL is
// judged by the crawl's scope (scope.ts) before anything is sent, then by the SSRF guard and the
// origin's robots.txt, and only then rendered through the same ScrapeService as /scrape. The
// job's pages take a background slot (jobs limiter: at most SCRAPER_JOB_CONCURRENCY pages of all
// jobs together) before a worker slot, so crawls never hold every worker and /scrape still runs.
// A host whose robots.txt asks for a Crawl-delay gets its pages one at a time, spaced by that
// delay (capped at SCRAPER_CRAWL_DELAY_MAX) within this job: pacing.ts.
import type { ScrapeInput, ScrapeService } from "../api/scrape-service.ts";
import type { ScraperConfig } from "../config.ts";
import type { Limiter } from "../limiter.ts";
import type { SsrfGuard } from "../ssrf/guard.ts";
import { type Job, pump } from "./jobs.ts";
import { appliedDelayMs, CrawlPacer, duration } from "./pacing.ts";
import type { CrawlBody, ScrapeOptions } from "./schemas.ts";
import { CrawlScope } from "./scope.ts";
import type { RobotsRules, SiteFiles } from "./site-files.ts";

export interface JobDeps {
  config: ScraperConfig;
  service: ScrapeService;
  guard: SsrfGuard;
  /** Background slots shared by every job. */
  jobLimiter: Limiter;
  siteFiles: SiteFiles;
  /** The jobs' clock (the store's), for a crawl's fetching time; Date.now by default. */
  now?: () => number;
}

export function scrapeInput(url: string, o: ScrapeOptions): ScrapeInput {
  return {
    url,
    formats: o.formats,
    pageOptions: {
      waitFor: o.waitFor,
      onlyMainContent: o.onlyMainContent,
      screenshot: false,
      fullPageScreenshot: false,
      includeHtml: true,
      headers: o.headers,
      timeout: o.timeout,
      blockMedia: o.blockMedia,
    },
  };
}

/** Pages of one job rendered at once: the request's maxConcurrency, at most the jobs' share. */
export function jobConcurrency(deps: JobDeps, asked: number | undefined): number {
  return Math.min(asked ?? deps.jobLimiter.concurrency, deps.jobLimiter.concurrency);
}

/** Scrapes one URL for a job: a background slot, then the scrape service (guard, worker slot, render). */
export function scrapeForJob(deps: JobDeps, signal: AbortSignal, input: ScrapeInput, links: boolean) {
  return deps.jobLimiter.run(() => deps.service.scrape(input, { signal, bulk: true, links }), {
    signal,
    force: true,
  });
}

/**
 * URLs one crawl remembers (queued, fetched or judged): a page may carry 5,000 links, so without a
 * bound a large site would grow the set without end. Past it, new URLs are not queued; the crawl
 * goes on with what it has.
 */
export const MAX_SEEN = 100_000;

/**
 * A crawl paced by Crawl-delay stops starting pages once less than this share of the job's
 * lifetime is left, so that its results can still be read before the job expires and is dropped.
 */
export const READ_SHARE = 0.1;

interface Candidate {
  url: URL;
  depth: number;
}

export async function runCrawl(job: Job, body: CrawlBody, deps: JobDeps): Promise<void> {
  const start = new URL(body.url);
  const scope = new CrawlScope(start, body);
  const limit = Math.min(body.limit ?? deps.config.jobs.maxPages, deps.config.jobs.maxPages);
  const signal = job.signal;
  const frontier: Candidate[] = [];
  const seen = new Set<string>();
  const robotsByOrigin = new Map<string, Promise<RobotsRules>>();
  let dispatched = 0;
  const now = deps.now ?? Date.now;
  const fetchUntil = job.expiresAt - (job.expiresAt - job.createdAt) * READ_SHARE;
  const pacer = new CrawlPacer({ timeLeft: () => fetchUntil - now() });
  const maxDelayMs = deps.config.jobs.maxCrawlDelayMs;
  const updateTotal = () => {
    job.total = Math.min(limit, dispatched + frontier.length);
  };

  /** Queues a URL once, if the scope lets it be followed and its path is wanted. */
  const discover = (raw: string, base: string | undefined, depth: number) => {
    const url = scope.normalise(raw, base);
    if (!url) return;
    const key = scope.key(url);
    if (seen.has(key) || seen.size >= MAX_SEEN) return;
    seen.add(key);
    if (!scope.followable(url) || !scope.pathWanted(url)) return;
    if (body.maxDiscoveryDepth !== undefined && depth > body.maxDiscoveryDepth) return;
    frontier.push({ url, depth });
  };
  const robotsOf = (origin: string) => {
    let rules = robotsByOrigin.get(origin);
    if (!rules) {
      rules = deps.siteFiles.robots(origin, signal);
      robotsByOrigin.set(origin, rules);
    }
    return rules;
  };

  // The start URL is always fetched (its links are the crawl), and kept only if its path is wanted.
  seen.add(scope.key(scope.start));
  frontier.push({ url: scope.start, depth: 0 });
  if (!body.ignoreSitemap) {
    const rules = await robotsOf(scope.start.origin).catch(() => undefined);
    const sitemap = await deps.siteFiles.sitemapUrls(scope.start.origin, rules?.sitemaps ?? [], signal);
    for (const page of sitemap) discover(page, undefined, 0);
  }
  updateTotal();

  /** Says in the job's status when a robots.txt asked for more than the cap. */
  const noteCap = (origin: string, seconds: number | undefined, applied: number) => {
    if (seconds === undefined || seconds * 1000 <= applied) return;
    job.warn(
      `cap ${origin}`,
      `robots.txt of ${origin} asks for ${seconds} s between requests (Crawl-delay); ${duration(applied)} is applied, ` +
        "the most this scraper waits (SCRAPER_CRAWL_DELAY_MAX)",
    );
  };
  /** Says when the pages known so far cannot all be fetched at this pace in the job's fetching time. */
  const forecast = (host: string, delayMs: number) => {
    const left = job.total - job.completed;
    if (job.stopped || delayMs * (left - 1) <= fetchUntil - now()) return job.warn("forecast", undefined);
    job.warn(
      "forecast",
      `at ${duration(delayMs)} between pages of ${host} (robots.txt Crawl-delay), the ${left} pages still to fetch (known so far) ` +
        `need at least ${duration(delayMs * (left - 1))}, more than the ${duration(fetchUntil - now())} this job ` +
        "may still fetch for (SCRAPER_JOB_TTL less a tenth, kept for reading the results): the crawl stops then",
    );
  };

  const visit = async ({ url, depth }: Candidate) => {
    let delayMs = 0;
    try {
      const rules = await robotsOf(url.origin);
      if (!rules.allowed(url.href)) {
        job.addRobotsBlocked(url.href);
        dispatched--;
        return;
      }
      delayMs = appliedDelayMs(rules.crawlDelaySeconds, maxDelayMs);
      noteCap(url.origin, rules.crawlDelaySeconds, delayMs);
    } catch (err) {
      // The origin is refused by the guard (its robots.txt was never fetched): nothing is sent to it.
      if (!signal.aborted) job.addError(url.href, err);
      dispatched--;
      return;
    } finally {
      updateTotal();
    }
    let endTurn: (() => void) | undefined;
    try {
      endTurn = await pacer.turn(url.host, delayMs, signal);
    } catch {
      return; // cancelled while waiting: nothing was sent
    }
    if (!endTurn) {
      dispatched--;
      job.stopped = true;
      job.warn("forecast", undefined);
      job.warn(
        "stopped",
        `stopped before its limit: robots.txt of ${url.origin} asks for ${duration(delayMs)} between requests ` +
          `(Crawl-delay), and the next page could not start before this job's fetching time ends at ` +
          `${new Date(fetchUntil).toISOString()} (SCRAPER_JOB_TTL less a tenth, kept for reading the results)`,
      );
      return;
    }
    if (delayMs > 0) forecast(url.host, delayMs);
    try {
      const data = await scrapeForJob(deps, job.signal, scrapeInput(url.href, body.scrapeOptions), true);
      const { links, ...rest } = data;
      const keep = body.scrapeOptions.formats.includes("links") ? data : rest;
      if (scope.pathWanted(url)) job.addPage(keep);
      const final = scope.normalise(String(data.metadata.url ?? url.href), undefined);
      if (final) seen.add(scope.key(final));
      for (const link of links ?? []) discover(link, undefined, depth + 1);
    } catch (err) {
      if (!signal.aborted) job.addError(url.href, err);
    } finally {
      endTurn();
      if (!signal.aborted) job.completed++;
      updateTotal();
    }
  };

  await pump<Candidate>({
    concurrency: jobConcurrency(deps, body.maxConcurrency),
    signal,
    stopped: () => job.stopped,
    next: () => {
      if (dispatched >= limit) return undefined;
      const item = frontier.shift();
      if (item) dispatched++;
      return item;
    },
    visit,
  });
  updateTotal();
}
