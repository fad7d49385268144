// Which URLs a crawl (or a map) may visit, decided on the URL alone, before any request: the
// same site as the start URL unless allowed otherwise, under the start path unless backward links
// are allowed, at most maxDepth path segments below the start, and include/exclude path
// patterns. The patterns are the client's regular expressions, matched with re2js (RE2: linear
// time, no backtracking), so a pattern cannot stall the process on a long path (ReDoS).
import { RE2JS } from "re2js";
import { ScraperError } from "../errors.ts";

export interface ScopeOptions {
  includePaths?: string[] | undefined;
  excludePaths?: string[] | undefined;
  /** Path segments below the start URL's (Firecrawl's maxDepth). */
  maxDepth?: number | undefined;
  allowBackwardLinks?: boolean | undefined;
  allowExternalLinks?: boolean | undefined;
  allowSubdomains?: boolean | undefined;
  ignoreQueryParameters?: boolean | undefined;
}

/** Compiles path patterns; an invalid one is a 400 naming the field. */
export function compilePatterns(patterns: readonly string[] | undefined, field: string): RE2JS[] {
  return (patterns ?? []).map((p, i) => {
    try {
      return RE2JS.compile(p);
    } catch (err) {
      throw new ScraperError("BAD_REQUEST", [`${field}.${i}: not a valid pattern (${(err as Error).message})`]);
    }
  });
}

const segments = (path: string) => path.split("/").filter(Boolean).length;
/** www.example.org and example.org are one site. */
const siteHost = (hostname: string) => hostname.toLowerCase().replace(/^www\./, "");

export class CrawlScope {
  readonly start: URL;
  private readonly o: ScopeOptions;
  private readonly include: RE2JS[];
  private readonly exclude: RE2JS[];
  private readonly startDepth: number;

  constructor(start: URL, opts: ScopeOptions) {
    this.o = opts;
    this.include = compilePatterns(opts.includePaths, "includePaths");
    this.exclude = compilePatterns(opts.excludePaths, "excludePaths");
    this.start = this.normalise(start.href, undefined) ?? start;
    this.startDepth = segments(this.start.pathname);
  }

  /** An absolute http(s) URL without its fragment (and without its query with ignoreQueryParameters), or null. */
  normalise(raw: string, base: string | undefined): URL | null {
    let url: URL;
    try {
      url = new URL(raw, base);
    } catch {
      return null;
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return null;
    url.hash = "";
    if (this.o.ignoreQueryParameters) url.search = "";
    return url;
  }

  /** What deduplicates URLs: the same page over http and https, or with and without www, is one. */
  key(url: URL): string {
    return `${siteHost(url.hostname)}:${url.port}${url.pathname}${url.search}`;
  }

  /** Same site: the start's host and port (www. aside), or a subdomain of it with allowSubdomains. */
  sameSite(url: URL): boolean {
    const host = siteHost(url.hostname);
    const start = siteHost(this.start.hostname);
    if (url.port !== this.start.port) return false;
    return host === start || (Boolean(this.o.allowSubdomains) && host.endsWith(`.${start}`));
  }

  /** May this URL be followed (site, start path, depth)? Path patterns are apart: see pathWanted(). */
  followable(url: URL): boolean {
    const same = this.sameSite(url);
    if (!same && !this.o.allowExternalLinks) return false;
    if (same && !this.o.allowBackwardLinks && !url.pathname.startsWith(this.start.pathname)) return false;
    if (same && this.o.maxDepth !== undefined && segments(url.pathname) - this.startDepth > this.o.maxDepth) {
      return false;
    }
    return true;
  }

  /** includePaths/excludePaths on the URL's path: an excluded path or one outside every include is not wanted. */
  pathWanted(url: URL): boolean {
    const path = url.pathname;
    if (this.exclude.some((re) => re.test(path))) return false;
    return this.include.length === 0 || this.include.some((re) => re.test(path));
  }
}
