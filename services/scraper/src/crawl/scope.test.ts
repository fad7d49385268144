// What a crawl may follow, decided on the URL alone: same site (www. aside, port included),
// under the start path, path depth, include/exclude patterns (RE2: a pattern that would
// backtrack for ever in JavaScript's engine answers at once), and the sitemap reader.
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { isScraperError } from "../errors.ts";
import { CrawlScope } from "./scope.ts";
import { parseSitemap } from "./site-files.ts";

const start = new URL("https://www.example.org/docs/");
const u = (s: string) => new URL(s);

describe("CrawlScope", () => {
  it("keeps to the start's site and path unless allowed otherwise", () => {
    const scope = new CrawlScope(start, {});
    expect(scope.followable(u("https://example.org/docs/a"))).toBe(true);
    expect(scope.followable(u("http://www.example.org/docs/a"))).toBe(true);
    expect(scope.followable(u("https://www.example.org/blog/"))).toBe(false);
    expect(scope.followable(u("https://www.example.org:8443/docs/a"))).toBe(false);
    expect(scope.followable(u("https://api.example.org/docs/a"))).toBe(false);
    expect(scope.followable(u("https://other.example/docs/a"))).toBe(false);
    const wide = new CrawlScope(start, { allowBackwardLinks: true, allowSubdomains: true, allowExternalLinks: false });
    expect(wide.followable(u("https://www.example.org/blog/"))).toBe(true);
    expect(wide.followable(u("https://api.example.org/x"))).toBe(true);
    expect(wide.followable(u("https://notexample.org/x"))).toBe(false);
    expect(new CrawlScope(start, { allowExternalLinks: true }).followable(u("https://other.example/"))).toBe(true);
  });

  it("counts maxDepth in path segments below the start URL's", () => {
    const scope = new CrawlScope(start, { maxDepth: 1 });
    expect(scope.followable(u("https://www.example.org/docs/a"))).toBe(true);
    expect(scope.followable(u("https://www.example.org/docs/a/b"))).toBe(false);
    expect(new CrawlScope(start, { maxDepth: 0 }).followable(u("https://www.example.org/docs/"))).toBe(true);
  });

  it("applies exclude before include, on the path", () => {
    const scope = new CrawlScope(start, { includePaths: ["^/docs/(api|guide)/"], excludePaths: ["/internal"] });
    expect(scope.pathWanted(u("https://www.example.org/docs/api/x"))).toBe(true);
    expect(scope.pathWanted(u("https://www.example.org/docs/api/internal/x"))).toBe(false);
    expect(scope.pathWanted(u("https://www.example.org/docs/other"))).toBe(false);
    expect(new CrawlScope(start, {}).pathWanted(u("https://www.example.org/anything"))).toBe(true);
  });

  it("matches in linear time: a catastrophic pattern for backtracking engines answers at once", () => {
    const scope = new CrawlScope(start, { includePaths: ["^/(a+)+$"] });
    const path = `https://www.example.org/${"a".repeat(5000)}b`;
    expect(scope.pathWanted(u(path))).toBe(false);
  });

  it("refuses an invalid pattern with BAD_REQUEST naming it", () => {
    try {
      new CrawlScope(start, { excludePaths: ["ok", "(unclosed"] });
      expect.unreachable();
    } catch (err) {
      expect(isScraperError(err) && err.code).toBe("BAD_REQUEST");
      expect((err as Error).message).toContain("excludePaths.1");
    }
  });

  it("normalises: fragment dropped, query dropped with ignoreQueryParameters, non-http refused", () => {
    const scope = new CrawlScope(start, { ignoreQueryParameters: true });
    expect(scope.normalise("a?x=1#top", "https://www.example.org/docs/")?.href).toBe("https://www.example.org/docs/a");
    expect(scope.normalise("mailto:x@example.org", undefined)).toBeNull();
    expect(scope.normalise("javascript:void(0)", undefined)).toBeNull();
    expect(scope.key(u("http://example.org/docs/a"))).toBe(scope.key(u("https://www.example.org/docs/a")));
  });
});

describe("parseSitemap", () => {
  const urlset = `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
    <url><loc> https://example.org/a </loc></url><url><loc>ftp://example.org/x</loc></url></urlset>`;
  it("reads urlset and sitemapindex entries, gzipped or not", () => {
    expect(parseSitemap(Buffer.from(urlset), 1 << 20)).toEqual({ pages: ["https://example.org/a"], sitemaps: [] });
    expect(parseSitemap(gzipSync(urlset), 1 << 20).pages).toEqual(["https://example.org/a"]);
    const index = `<sitemapindex><sitemap><loc>https://example.org/s1.xml</loc></sitemap></sitemapindex>`;
    expect(parseSitemap(Buffer.from(index), 1 << 20)).toEqual({ pages: [], sitemaps: ["https://example.org/s1.xml"] });
  });
  it("gives nothing for a gzip bomb past the byte cap or for garbage", () => {
    expect(parseSitemap(gzipSync(Buffer.alloc(1 << 20, 32)), 1024)).toEqual({ pages: [], sitemaps: [] });
    expect(parseSitemap(Buffer.from("not xml <<<"), 1024)).toEqual({ pages: [], sitemaps: [] });
  });
});
