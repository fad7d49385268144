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

/**
 * One crawl's state and steps. A page counts against the limit once it is admitted: its origin's
 * robots.txt allows it, the guard let its robots.txt be fetched, and its host's pacing gave it a
 * turn; a page refused before that sends nothing and costs nothing. Pages picked while the limit
 * was not yet reached, and admitted after it was, are dropped.
 */
class Crawl {
  private readonly scope: CrawlScope;
  private readonly limit: number;
  private readonly frontier: Candidate[] = [];
  private readonly seen = new Set<string>();
  private readonly robotsByOrigin = new Map<string, Promise<RobotsRules>>();
  /** Pages admitted (a request sent, or about to be). */
  private admitted = 0;
  private readonly now: () => number;
  /** When the job stops starting pages, leaving READ_SHARE of its lifetime to read the results. */
  private readonly fetchUntil: number;
  private readonly pacer: CrawlPacer;

  private readonly job: Job;
  private readonly body: CrawlBody;
  private readonly deps: JobDeps;

  constructor(job: Job, body: CrawlBody, deps: JobDeps) {
    this.job = job;
    this.body = body;
    this.deps = deps;
    this.scope = new CrawlScope(new URL(body.url), body);
    this.limit = Math.min(body.limit ?? deps.config.jobs.maxPages, deps.config.jobs.maxPages);
    this.now = deps.now ?? Date.now;
    this.fetchUntil = job.expiresAt - (job.expiresAt - job.createdAt) * READ_SHARE;
    this.pacer = new CrawlPacer({ timeLeft: () => this.fetchUntil - this.now() });
  }

  async run(): Promise<void> {
    await this.seed();
    await pump<Candidate>({
      concurrency: jobConcurrency(this.deps, this.body.maxConcurrency),
      signal: this.job.signal,
      stopped: () => this.job.stopped,
      next: () => (this.admitted >= this.limit ? undefined : this.frontier.shift()),
      visit: (c) => this.visit(c),
    });
    this.updateTotal();
  }

  /** The start URL (always fetched: its links are the crawl; kept only if its path is wanted) and the sitemap's pages. */
  private async seed(): Promise<void> {
    const { scope, body } = this;
    this.seen.add(scope.key(scope.start));
    this.frontier.push({ url: scope.start, depth: 0 });
    if (!body.ignoreSitemap) {
      const rules = await this.robotsOf(scope.start.origin).catch(() => undefined);
      const sitemap = await this.deps.siteFiles.sitemapUrls(scope.start.origin, rules?.sitemaps ?? [], this.job.signal);
      for (const page of sitemap) this.discover(page, 0);
    }
    this.updateTotal();
  }

  private async visit(candidate: Candidate): Promise<void> {
    const endTurn = await this.admit(candidate.url);
    this.updateTotal();
    if (!endTurn) return;
    try {
      await this.fetch(candidate);
    } finally {
      endTurn();
      if (!this.job.signal.aborted) this.job.completed++;
      this.updateTotal();
    }
  }

  /** A page's turn (its end to call when done), or undefined when it is refused or the crawl is over. */
  private async admit(url: URL): Promise<(() => void) | undefined> {
    const delayMs = await this.politeDelay(url);
    if (delayMs === undefined) return undefined;
    let endTurn: (() => void) | undefined;
    try {
      endTurn = await this.pacer.turn(url.host, delayMs, this.job.signal);
    } catch {
      return undefined; // cancelled while waiting: nothing was sent
    }
    if (!endTurn) {
      this.stopForPace(url, delayMs);
      return undefined;
    }
    if (this.admitted >= this.limit) {
      endTurn();
      return undefined;
    }
    this.admitted++;
    if (delayMs > 0) this.forecast(url.host, delayMs);
    return endTurn;
  }

  /** The wait robots.txt asks between pages of the URL's host, or undefined when it may not be fetched. */
  private async politeDelay(url: URL): Promise<number | undefined> {
    try {
      const rules = await this.robotsOf(url.origin);
      if (!rules.allowed(url.href)) {
        this.job.addRobotsBlocked(url.href);
        return undefined;
      }
      const delayMs = appliedDelayMs(rules.crawlDelaySeconds, this.deps.config.jobs.maxCrawlDelayMs);
      this.noteCap(url.origin, rules.crawlDelaySeconds, delayMs);
      return delayMs;
    } catch (err) {
      // The origin is refused by the guard (its robots.txt was never fetched): nothing is sent to it.
      if (!this.job.signal.aborted) this.job.addError(url.href, err);
      return undefined;
    }
  }

  /** Renders the page, keeps it if its path is wanted, and queues its links. */
  private async fetch({ url, depth }: Candidate): Promise<void> {
    const { job, scope, body } = this;
    try {
      const data = await scrapeForJob(this.deps, job.signal, scrapeInput(url.href, body.scrapeOptions), true);
      const { links, ...rest } = data;
      if (scope.pathWanted(url)) job.addPage(body.scrapeOptions.formats.includes("links") ? data : rest);
      const final = scope.normalise(String(data.metadata.url ?? url.href), undefined);
      if (final) this.seen.add(scope.key(final));
      for (const link of links ?? []) this.discover(link, depth + 1);
    } catch (err) {
      if (!job.signal.aborted) job.addError(url.href, err);
    }
  }

  /** Queues a URL once, if the scope lets it be followed and its path is wanted. */
  private discover(raw: string, depth: number): void {
    const url = this.scope.normalise(raw, undefined);
    if (!url) return;
    const key = this.scope.key(url);
    if (this.seen.has(key) || this.seen.size >= MAX_SEEN) return;
    this.seen.add(key);
    if (!this.scope.followable(url) || !this.scope.pathWanted(url)) return;
    if (this.body.maxDiscoveryDepth !== undefined && depth > this.body.maxDiscoveryDepth) return;
    this.frontier.push({ url, depth });
  }

  private robotsOf(origin: string): Promise<RobotsRules> {
    let rules = this.robotsByOrigin.get(origin);
    if (!rules) {
      rules = this.deps.siteFiles.robots(origin, this.job.signal);
      this.robotsByOrigin.set(origin, rules);
    }
    return rules;
  }

  private updateTotal(): void {
    this.job.total = Math.min(this.limit, this.admitted + this.frontier.length);
  }

  /** Says in the job's status when a robots.txt asked for more than the cap. */
  private noteCap(origin: string, seconds: number | undefined, applied: number): void {
    if (seconds === undefined || seconds * 1000 <= applied) return;
    this.job.warn(
      `cap ${origin}`,
      `robots.txt of ${origin} asks for ${seconds} s between requests (Crawl-delay); ${duration(applied)} is applied, ` +
        "the most this scraper waits (SCRAPER_CRAWL_DELAY_MAX)",
    );
  }

  /** Says when the pages known so far cannot all be fetched at this pace in the job's fetching time. */
  private forecast(host: string, delayMs: number): void {
    const { job } = this;
    const left = job.total - job.completed;
    if (job.stopped || delayMs * (left - 1) <= this.fetchUntil - this.now()) {
      job.warn("forecast", undefined);
      return;
    }
    job.warn(
      "forecast",
      `at ${duration(delayMs)} between pages of ${host} (robots.txt Crawl-delay), the ${left} pages still to fetch (known so far) ` +
        `need at least ${duration(delayMs * (left - 1))}, more than the ${duration(this.fetchUntil - this.now())} this job ` +
        "may still fetch for (SCRAPER_JOB_TTL less a tenth, kept for reading the results): the crawl stops then",
    );
  }

  /** The next page of a host paced by Crawl-delay cannot start before the job's fetching time ends. */
  private stopForPace(url: URL, delayMs: number): void {
    this.job.stopped = true;
    this.job.warn("forecast", undefined);
    this.job.warn(
      "stopped",
      `stopped before its limit: robots.txt of ${url.origin} asks for ${duration(delayMs)} between requests ` +
        `(Crawl-delay), and the next page could not start before this job's fetching time ends at ` +
        `${new Date(this.fetchUntil).toISOString()} (SCRAPER_JOB_TTL less a tenth, kept for reading the results)`,
    );
  }
}

export async function runCrawl(job: Job, body: CrawlBody, deps: JobDeps): Promise<void> {
  await new Crawl(job, body, deps).run();
}
