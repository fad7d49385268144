// POST /map: a site's URLs without scraping them, from its sitemaps (those robots.txt names, or
// /sitemap.xml) and the links of its start page rendered through the same ScrapeService as
// /scrape (SSRF guard, worker slots, queue bound). Same site by default, as a crawl.
import type { JobDeps } from "./crawler.ts";
import type { MapBody } from "./schemas.ts";
import { CrawlScope } from "./scope.ts";

export async function mapSite(body: MapBody, deps: JobDeps, signal: AbortSignal): Promise<string[]> {
  const scope = new CrawlScope(new URL(body.url), {
    allowSubdomains: body.includeSubdomains,
    allowBackwardLinks: true,
  });
  const found: string[] = [];
  if (!body.ignoreSitemap) {
    // A refused or missing robots.txt names no sitemap: /sitemap.xml is tried.
    const rules = await deps.siteFiles.robots(scope.start.origin, signal).catch(() => undefined);
    found.push(...(await deps.siteFiles.sitemapUrls(scope.start.origin, rules?.sitemaps ?? [], signal)));
  }
  if (!body.sitemapOnly) {
    const page = await deps.service.scrape(
      {
        url: body.url,
        formats: ["links"],
        pageOptions: {
          waitFor: 0,
          screenshot: false,
          fullPageScreenshot: false,
          onlyMainContent: false,
          includeHtml: false,
        },
      },
      { signal },
    );
    found.push(scope.start.href, ...(page.links ?? []));
  }
  const search = body.search?.toLowerCase();
  const seen = new Set<string>();
  const links: string[] = [];
  for (const raw of found) {
    const url = scope.normalise(raw, undefined);
    if (!url || !scope.sameSite(url)) continue;
    const key = scope.key(url);
    if (seen.has(key)) continue;
    seen.add(key);
    if (search && !url.href.toLowerCase().includes(search)) continue;
    links.push(url.href);
    if (links.length >= body.limit) break;
  }
  return links;
}
