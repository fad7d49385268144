// One page of a shared job, as any replica's BullMQ worker runs it: the same checks and render as
// an in-memory crawl (crawler.ts: scope, SSRF guard, robots.txt, ScrapeService), then the links it
// found queued as pages of their own, then the page finished in one atomic step (shared-state.ts).
// A page may run more than once (its replica died, its lock lapsed): everything it writes is keyed
// by the page, so a second run adds nothing twice, and re-adds its links in case the first run died
// before it had added them.
import { createHash, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { RedisClient } from "@capstan/shared/redis";
import type { Job as BullJob, Queue } from "bullmq";
import { DelayedError } from "bullmq";
import { isScraperError, ScraperError } from "../errors.ts";
import type { JobDeps } from "./crawler.ts";
import { READ_SHARE, scrapeForJob, scrapeInput } from "./crawler.ts";
import type { HostSlots, Slot } from "./host-slots.ts";
import type { JobKind, PageOutcome } from "./jobs.ts";
import { appliedDelayMs, duration } from "./pacing.ts";
import type { BatchBody, CrawlBody } from "./schemas.ts";
import { CrawlScope } from "./scope.ts";
import { type JobScripts, jobKeys } from "./shared-state.ts";
import type { RobotsRules } from "./site-files.ts";

/** What a BullMQ job of the page queue carries. */
export interface PageTask {
  job: string;
  kind: JobKind;
  key: string;
  url: string;
  depth: number;
}

/** A URL a page found: its key (scope.key: ignoreQueryParameters applies), and whether robots.txt refuses it. */
interface Found {
  key: string;
  url: string;
  depth: number;
  blocked: boolean;
}

/** What a page's render answers. */
type PageData = Awaited<ReturnType<typeof scrapeForJob>>;

/** A slot wait longer than this puts the page back in the queue (freeing the worker) instead. */
const WAIT_IN_PLACE_MS = 1_000;
/** robots.txt rules kept per origin by this process. */
const ROBOTS_TTL_MS = 10 * 60_000;
const ROBOTS_KEPT = 1_000;

/** The key of a page within its job: short, fixed length, usable in a BullMQ job id. */
export function pageKey(text: string): string {
  return createHash("sha256").update(text).digest("base64url").slice(0, 22);
}

export function bullJobId(task: Pick<PageTask, "job" | "key">): string {
  return `${task.job}.${task.key}`;
}

interface JobMeta {
  kind: JobKind;
  status: string;
  body: string;
  createdAt: string;
  expiresAt: string;
  stopped?: string;
}

export interface PageRunnerDeps {
  redis: RedisClient & JobScripts;
  prefix: string;
  queue: Queue<PageTask>;
  slots: HostSlots;
  jobDeps: JobDeps;
  /** Aborts this process's in-flight renders of a job when it is cancelled here. */
  signalOf(job: string): AbortSignal;
  /** The process is shutting down: a page cut short is left to run again, not recorded. */
  closing(): boolean;
  onPage?: (kind: JobKind, outcome: PageOutcome) => void;
}

export class PageRunner {
  private readonly robots = new Map<string, { at: number; rules: Promise<RobotsRules> }>();
  private readonly bodies = new Map<string, { body: CrawlBody | BatchBody; scope?: CrawlScope }>();

  private readonly d: PageRunnerDeps;

  constructor(d: PageRunnerDeps) {
    this.d = d;
  }

  private robotsOf(origin: string, signal: AbortSignal): Promise<RobotsRules> {
    const hit = this.robots.get(origin);
    if (hit && Date.now() - hit.at < ROBOTS_TTL_MS) return hit.rules;
    if (this.robots.size >= ROBOTS_KEPT) this.robots.clear();
    const rules = this.d.jobDeps.siteFiles.robots(origin, signal);
    rules.catch(() => this.robots.delete(origin));
    this.robots.set(origin, { at: Date.now(), rules });
    return rules;
  }

  private parsed(id: string, meta: JobMeta) {
    let hit = this.bodies.get(id);
    if (!hit) {
      const body = JSON.parse(meta.body) as CrawlBody | BatchBody;
      const scope =
        meta.kind === "crawl" ? new CrawlScope(new URL((body as CrawlBody).url), body as CrawlBody) : undefined;
      hit = scope ? { body, scope } : { body };
      if (this.bodies.size >= 100) this.bodies.clear();
      this.bodies.set(id, hit);
    }
    return hit;
  }

  private async warn(id: string, topic: string, message: string, expiresAt: string): Promise<void> {
    const k = jobKeys(this.d.prefix, id);
    await this.d.redis.multi().hset(k.warn, topic, message).pexpireat(k.warn, Number(expiresAt)).exec();
  }

  private finish(task: PageTask, outcome: "ok" | "error" | "skip", payload = "", finalKey = "") {
    const k = jobKeys(this.d.prefix, task.job);
    const running = `${this.d.prefix}:running`;
    const maxBytes = this.d.jobDeps.config.jobs.maxBytes;
    return this.d.redis.finishPage(
      k.meta,
      k.pending,
      k.done,
      k.pages,
      k.errors,
      k.seen,
      running,
      task.job,
      task.key,
      outcome,
      payload,
      maxBytes,
      finalKey,
    );
  }

  /** Records a failed page (the job goes on). */
  async fail(task: PageTask, err: unknown): Promise<void> {
    this.d.onPage?.(task.kind, "error");
    const e = isScraperError(err) ? err : new ScraperError("INTERNAL");
    const entry = {
      id: randomUUID(),
      timestamp: new Date().toISOString(),
      url: task.url,
      error: e.message,
      code: e.code,
    };
    await this.finish(task, "error", JSON.stringify(entry));
  }

  /** Queues what a page found: links (robots.txt-disallowed ones are listed instead), as new pages. */
  private async enqueue(task: PageTask, found: Found[], retry: boolean, limit: number) {
    if (found.length === 0) return;
    const k = jobKeys(this.d.prefix, task.job);
    const args: string[] = [];
    const byKey = new Map<string, { url: string; depth: number }>();
    for (const f of found) {
      const key = f.key;
      if (byKey.has(key)) continue;
      byKey.set(key, f);
      args.push(key, f.blocked ? f.url : "q");
    }
    const [blocked, ...keys] = await this.d.redis.enqueuePages(
      k.meta,
      k.seen,
      k.pending,
      k.blocked,
      limit,
      retry ? 1 : 0,
      ...args,
    );
    for (let i = 0; i < Number(blocked); i++) this.d.onPage?.(task.kind, "robots_blocked");
    if (keys.length === 0) return;
    await this.d.queue.addBulk(
      keys.map((key) => {
        const f = byKey.get(key) as { url: string; depth: number };
        const data: PageTask = { job: task.job, kind: task.kind, key, url: f.url, depth: f.depth };
        return { name: task.kind, data, opts: { jobId: bullJobId(data) } };
      }),
    );
  }

  /** Runs one page; throws DelayedError when the page was put back to wait for its host. */
  async run(bull: BullJob<PageTask>, token: string | undefined): Promise<void> {
    const task = bull.data;
    if (this.d.closing()) throw new ScraperError("RENDERER_UNAVAILABLE", ["the scraper is shutting down"]);
    const k = jobKeys(this.d.prefix, task.job);
    const meta = (await this.d.redis.hgetall(k.meta)) as unknown as JobMeta;
    if (!meta.status) return; // expired or evicted: nothing to record
    if (meta.status !== "scraping" || meta.stopped || (await this.d.redis.sismember(k.done, task.key))) {
      await this.finish(task, "skip");
      return;
    }
    const { body, scope } = this.parsed(task.job, meta);
    const signal = this.d.signalOf(task.job);
    const url = new URL(task.url);
    const retry = (bull.attemptsStarted ?? 0) > 1;

    const delayMs = task.kind === "crawl" ? await this.crawlDelay(task, meta, url, signal) : 0;
    if (delayMs === undefined) return;
    const slot = await this.turnAt(bull, token, meta, body, url, delayMs, signal);
    if (!slot) return;
    const data = await this.scrapeIn(slot, task, body, signal);
    if (!data) return;
    this.d.onPage?.(task.kind, "ok");
    if (task.kind === "batch" || !scope) {
      await this.finish(task, "ok", JSON.stringify(data));
      return;
    }
    await this.finishCrawled(task, body as CrawlBody, scope, url, data, retry, signal);
  }

  /**
   * The wait between two requests to the page's host that its robots.txt asks for (Crawl-delay),
   * capped by SCRAPER_CRAWL_DELAY_MAX, with a warning on the job when capped. Undefined when the
   * origin is refused by the guard: the page is then recorded as failed.
   */
  private async crawlDelay(task: PageTask, meta: JobMeta, url: URL, signal: AbortSignal) {
    let rules: RobotsRules;
    try {
      rules = await this.robotsOf(url.origin, signal);
    } catch (err) {
      // The origin is refused by the guard (its robots.txt was never fetched): nothing is sent to it.
      await this.fail(task, err);
      return undefined;
    }
    const maxDelay = this.d.jobDeps.config.jobs.maxCrawlDelayMs;
    const delayMs = appliedDelayMs(rules.crawlDelaySeconds, maxDelay);
    const asked = rules.crawlDelaySeconds;
    if (asked !== undefined && asked * 1000 > delayMs) {
      await this.warn(
        task.job,
        `cap ${url.origin}`,
        `robots.txt of ${url.origin} asks for ${asked} s between requests (Crawl-delay); ${duration(delayMs)} is applied, ` +
          "the most this scraper waits (SCRAPER_CRAWL_DELAY_MAX)",
        meta.expiresAt,
      );
    }
    return delayMs;
  }

  /**
   * Waits for the page's turn at its host (the host's delay, the job's maxConcurrency) and answers
   * the slot it got. A long wait puts the page back in the queue instead (DelayedError is thrown);
   * a turn that would come after the job's fetching time stops the job. Undefined when the page
   * was finished here without a render (stopped, or its job cancelled while it waited).
   */
  private async turnAt(
    bull: BullJob<PageTask>,
    token: string | undefined,
    meta: JobMeta,
    body: CrawlBody | BatchBody,
    url: URL,
    delayMs: number,
    signal: AbortSignal,
  ): Promise<Slot | undefined> {
    const task = bull.data;
    const created = Number(meta.createdAt);
    const expires = Number(meta.expiresAt);
    const fetchUntil = expires - (expires - created) * READ_SHARE;
    const concurrency = (body as CrawlBody).maxConcurrency;
    const slotReq = { host: url.host, delayMs, ...(concurrency ? { job: { id: task.job, concurrency } } : {}) };
    let got = await this.d.slots.tryAcquire(slotReq);
    while ("waitMs" in got) {
      if (Date.now() + got.waitMs > fetchUntil) {
        await this.stopForTime(task, meta, url.origin, delayMs, fetchUntil);
        return undefined;
      }
      if (got.waitMs > WAIT_IN_PLACE_MS && token) {
        await bull.moveToDelayed(Date.now() + got.waitMs, token);
        throw new DelayedError();
      }
      await sleep(got.waitMs, undefined, { signal });
      got = await this.d.slots.tryAcquire(slotReq);
    }
    const slot = got.slot;
    // The job may have been cancelled (or stopped) while this page waited for its turn.
    if ((await this.d.redis.hget(jobKeys(this.d.prefix, task.job).meta, "status")) !== "scraping") {
      await slot.release();
      await this.finish(task, "skip");
      return undefined;
    }
    return slot;
  }

  /**
   * Renders the page while holding its host's slot, which it then releases. Undefined when the
   * render failed (recorded as the page's error) or its job was cancelled (skipped); a render cut
   * short by shutdown throws, so the page runs again elsewhere.
   */
  private async scrapeIn(slot: Slot, task: PageTask, body: CrawlBody | BatchBody, signal: AbortSignal) {
    let data: PageData;
    try {
      const options = task.kind === "crawl" ? (body as CrawlBody).scrapeOptions : (body as BatchBody);
      data = await scrapeForJob(this.d.jobDeps, signal, scrapeInput(task.url, options), task.kind === "crawl");
    } catch (err) {
      await slot.release();
      if (this.d.closing()) throw err;
      if (signal.aborted) await this.finish(task, "skip");
      else await this.fail(task, err);
      return undefined;
    }
    await slot.release();
    return data;
  }

  /** A crawled page: the pages it found are queued, then it is finished with its result. */
  private async finishCrawled(
    task: PageTask,
    crawl: CrawlBody,
    scope: CrawlScope,
    url: URL,
    data: PageData,
    retry: boolean,
    signal: AbortSignal,
  ) {
    const { links, ...rest } = data;
    const keep = crawl.scrapeOptions.formats.includes("links") ? data : rest;
    const limit = Math.min(crawl.limit ?? this.d.jobDeps.config.jobs.maxPages, this.d.jobDeps.config.jobs.maxPages);
    const found = await this.discovered(task, crawl, scope, links ?? [], signal);
    await this.enqueue(task, found, retry, limit);
    const final = scope.normalise(String(data.metadata.url ?? task.url), undefined);
    const finalKey = final ? pageKey(scope.key(final)) : "";
    await this.finish(task, "ok", scope.pathWanted(url) ? JSON.stringify(keep) : "", finalKey);
  }

  /**
   * The pages a crawled page leads to, in the crawl's scope and depth: its links, and the site's
   * sitemap when it is the start page. Each is marked blocked when robots.txt disallows it.
   */
  private async discovered(
    task: PageTask,
    crawl: CrawlBody,
    scope: CrawlScope,
    links: string[],
    signal: AbortSignal,
  ): Promise<Found[]> {
    const found: Found[] = [];
    const add = async (raw: string, depth: number) => {
      const next = scope.normalise(raw, undefined);
      if (!next || !scope.followable(next) || !scope.pathWanted(next)) return;
      if (crawl.maxDiscoveryDepth !== undefined && depth > crawl.maxDiscoveryDepth) return;
      const rules = await this.robotsOf(next.origin, signal).catch(() => undefined);
      found.push({
        key: pageKey(scope.key(next)),
        url: next.href,
        depth,
        blocked: rules ? !rules.allowed(next.href) : false,
      });
    };
    if (task.depth === 0 && task.url === scope.start.href && !crawl.ignoreSitemap) {
      const rules = await this.robotsOf(scope.start.origin, signal).catch(() => undefined);
      const sitemap = await this.d.jobDeps.siteFiles.sitemapUrls(scope.start.origin, rules?.sitemaps ?? [], signal);
      for (const page of sitemap) await add(page, 0);
    }
    for (const link of links) await add(link, task.depth + 1);
    return found;
  }

  /** The host's next turn comes after the job's fetching time: the job stops with what it has. */
  private async stopForTime(task: PageTask, meta: JobMeta, origin: string, delayMs: number, fetchUntil: number) {
    const k = jobKeys(this.d.prefix, task.job);
    await this.d.redis.hset(k.meta, "stopped", "time");
    await this.warn(
      task.job,
      "stopped",
      `stopped before its limit: robots.txt of ${origin} asks for ${duration(delayMs)} between requests ` +
        `(Crawl-delay), and the next page could not start before this job's fetching time ends at ` +
        `${new Date(fetchUntil).toISOString()} (SCRAPER_JOB_TTL less a tenth, kept for reading the results)`,
      meta.expiresAt,
    );
    await this.finish(task, "skip");
  }
}
