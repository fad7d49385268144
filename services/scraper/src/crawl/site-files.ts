// A site's robots.txt and sitemaps, fetched from Node (not Chromium) through the SSRF guard's
// connector, on the shared resilience policy (per-attempt timeout, two retries with full jitter
// on connection failures, 429 and 5xx, the outbound metrics under target "site"), with a byte cap.
// robots.txt is read by `robots-parser` (RFC 9309 matching, wildcards, Sitemap and Crawl-delay
// lines), sitemaps (urlset and sitemapindex, gzipped or not) by cheerio in XML mode.
import { createRequire } from "node:module";
import { gunzipSync } from "node:zlib";
import { isRetryableStatus, OutboundPolicy } from "@capstan/shared/resilience";
import { load } from "cheerio";
import { type Dispatcher, fetch } from "undici";
import { AttemptFailure } from "../api/outbound.ts";
import { isScraperError, ScraperError } from "../errors.ts";
import type { ApiMetrics } from "../metrics.ts";
import type { SsrfGuard } from "../ssrf/guard.ts";

// robots-parser is CommonJS whose module.exports is the function (its typings say `export default`).
const robotsParser = createRequire(import.meta.url)("robots-parser") as typeof import("robots-parser").default;

/** The product token robots.txt groups are matched against (a `User-agent: *` group applies too). */
export const ROBOTS_AGENT = "CapstanScraper";
const USER_AGENT = `${ROBOTS_AGENT}/1.0 (robots.txt honoured)`;
/** RFC 9309 lets a crawler stop reading robots.txt after 500 KiB. */
const ROBOTS_MAX_BYTES = 500 * 1024;
/** Sitemap files read for one site (an index and the sitemaps it names). */
const MAX_SITEMAP_FILES = 20;
/** URLs read from a site's sitemaps (filters are applied afterwards, so this is not the job's limit). */
export const MAX_SITEMAP_URLS = 50_000;
/** Time all of a site's sitemap files may take together: a crawl or map does not wait longer to start. */
const SITEMAP_BUDGET_MS = 20_000;

export interface RobotsRules {
  allowed(url: string): boolean;
  sitemaps: string[];
  /** The Crawl-delay of the group that applies to ROBOTS_AGENT, in seconds as written (uncapped). */
  crawlDelaySeconds?: number;
}

interface Fetched {
  status: number;
  body: Buffer;
  /** A redirect's target, as sent. */
  location?: string;
}

const MAX_REDIRECTS = 5;

export interface SiteFilesDeps {
  guard: SsrfGuard;
  dispatcher: Dispatcher;
  metrics: ApiMetrics;
  maxBytes: number;
  timeoutMs?: number;
}

export class SiteFiles {
  private readonly d: SiteFilesDeps;
  private readonly policy: OutboundPolicy;

  constructor(deps: SiteFilesDeps) {
    this.d = deps;
    this.policy = new OutboundPolicy({
      target: "site",
      timeoutMs: deps.timeoutMs ?? 10_000,
      maxAttempts: 3,
      baseDelayMs: 200,
      maxDelayMs: 2_000,
      metrics: deps.metrics.outbound,
      classify: (err) =>
        err instanceof AttemptFailure
          ? err.failure
          : { retry: false, outcome: isScraperError(err) ? err.code : "error" },
      timeoutError: () => new AttemptFailure("timed out", { retry: true, outcome: "timeout" }),
    });
  }

  /**
   * GET of a site file. Redirects are followed here, hop by hop (at most 5): each target, the
   * first included, is checked by the guard before anything is sent to it (403 BLOCKED_TARGET),
   * and the connection itself goes through the guard's connector (or, with PROXY_SERVER, to the
   * proxy once the guard has checked the target).
   */
  async get(raw: string, maxBytes: number, signal: AbortSignal): Promise<Fetched> {
    let url = new URL(raw);
    for (let hop = 0; ; hop++) {
      if (url.protocol !== "http:" && url.protocol !== "https:") {
        throw this.d.guard.refuse("api", url.protocol, `redirect to scheme ${url.protocol}`);
      }
      await this.d.guard.check(url, "api");
      let res: Fetched;
      try {
        const target = url;
        res = await this.policy.execute(({ signal: attempt }) => this.once(target, maxBytes, attempt), { signal });
      } catch (err) {
        if (err instanceof AttemptFailure) throw new ScraperError("UNREACHABLE", [`${url.origin}: ${err.message}`]);
        throw err;
      }
      if (!res.location || hop >= MAX_REDIRECTS) return res;
      url = new URL(res.location, url);
    }
  }

  private async once(url: URL, maxBytes: number, signal: AbortSignal): Promise<Fetched> {
    let res: Awaited<ReturnType<typeof fetch>>;
    try {
      res = await fetch(url, {
        headers: { "user-agent": USER_AGENT },
        dispatcher: this.d.dispatcher,
        redirect: "manual",
        signal,
      });
    } catch (err) {
      if (isScraperError((err as Error).cause)) throw (err as Error).cause;
      throw new AttemptFailure("connection failed", { retry: true, outcome: "error" });
    }
    const location = res.status >= 300 && res.status < 400 ? res.headers.get("location") : null;
    if (location) {
      await res.body?.cancel();
      return { status: res.status, body: Buffer.alloc(0), location };
    }
    if (isRetryableStatus(res.status)) {
      await res.body?.cancel();
      throw new AttemptFailure(`HTTP ${res.status}`, {
        retry: true,
        outcome: `http_${res.status}`,
        retryAfter: res.headers.get("retry-after"),
      });
    }
    const chunks: Buffer[] = [];
    let size = 0;
    if (res.body) {
      for await (const chunk of res.body) {
        size += chunk.length;
        if (size > maxBytes) break;
        chunks.push(Buffer.from(chunk));
      }
    }
    return { status: res.status, body: Buffer.concat(chunks) };
  }

  /**
   * The robots.txt rules of an origin (RFC 9309): a 4xx (no file) allows everything; a 5xx or an
   * unreachable site disallows everything, since the rules cannot be known; a refused origin
   * throws BLOCKED_TARGET.
   */
  async robots(origin: string, signal: AbortSignal): Promise<RobotsRules> {
    const url = `${origin}/robots.txt`;
    let text = "";
    try {
      const res = await this.get(url, ROBOTS_MAX_BYTES, signal);
      if (res.status >= 200 && res.status < 300) text = res.body.toString("utf8");
    } catch (err) {
      if (isScraperError(err) && err.code === "BLOCKED_TARGET") throw err;
      if (signal.aborted) throw err;
      return { allowed: () => false, sitemaps: [] };
    }
    const rules = robotsParser(url, text);
    const delay = rules.getCrawlDelay(ROBOTS_AGENT);
    return {
      allowed: (u) => rules.isAllowed(u, ROBOTS_AGENT) !== false,
      sitemaps: rules.getSitemaps(),
      ...(delay !== undefined && delay > 0 ? { crawlDelaySeconds: delay } : {}),
    };
  }

  /**
   * Page URLs of a site's sitemaps: those robots.txt names, else /sitemap.xml; a sitemap index is
   * followed (at most 20 files, 50,000 URLs and 20 s in all: what was read by then is used). A
   * missing or unreadable sitemap gives none.
   */
  async sitemapUrls(origin: string, named: string[], parent: AbortSignal): Promise<string[]> {
    const limit = MAX_SITEMAP_URLS;
    const signal = AbortSignal.any([parent, AbortSignal.timeout(SITEMAP_BUDGET_MS)]);
    const queue = named.length > 0 ? [...named] : [`${origin}/sitemap.xml`];
    const seen = new Set<string>();
    const urls = new Set<string>();
    while (queue.length > 0 && seen.size < MAX_SITEMAP_FILES && urls.size < limit && !signal.aborted) {
      const file = queue.shift() as string;
      if (seen.has(file)) continue;
      seen.add(file);
      let res: Fetched;
      try {
        res = await this.get(file, this.d.maxBytes, signal);
      } catch {
        continue;
      }
      if (res.status < 200 || res.status >= 300) continue;
      const { pages, sitemaps } = parseSitemap(res.body, this.d.maxBytes);
      queue.push(...sitemaps);
      for (const page of pages) {
        if (urls.size >= limit) break;
        urls.add(page);
      }
    }
    return [...urls];
  }
}

/** The <loc> entries of a sitemap (urlset) or sitemap index; gzip is recognised by its magic bytes. */
export function parseSitemap(body: Buffer, maxBytes: number): { pages: string[]; sitemaps: string[] } {
  let xml: string;
  try {
    xml = (body[0] === 0x1f && body[1] === 0x8b ? gunzipSync(body, { maxOutputLength: maxBytes }) : body).toString(
      "utf8",
    );
  } catch {
    return { pages: [], sitemaps: [] };
  }
  const $ = load(xml, { xml: true });
  const locs = (selector: string) =>
    $(selector)
      .map((_, el) => $(el).text().trim())
      .get()
      .filter((loc) => /^https?:\/\//i.test(loc));
  return { pages: locs("url > loc"), sitemaps: locs("sitemap > loc") };
}
