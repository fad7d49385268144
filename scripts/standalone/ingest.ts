// Standalone ingestion: what the operator's KnowledgeBase reconciler does in a cluster, once at
// start. Inline texts go straight to the search service's documents API; URL sources are fetched
// through the scraper first, crawl sources crawled through it (one document per page). A source that fails is reported and skipped, never fatal.

import { docsIdFor, kbSettings } from "@capstan/operator/translate";
import type { KnowledgeBase } from "@capstan/shared/api";
import { knowledgeIdOf } from "@capstan/shared/api";
import type { ScraperClient } from "@capstan/shared/clients/scraper-client";
import { crawlPages } from "@capstan/shared/clients/scraper-crawl";
import type { SearchClient } from "@capstan/shared/clients/search-client";

export interface IngestSummary {
  knowledgeId: string;
  documents: number;
  chunks: number;
  failures: string[];
}

type Source = KnowledgeBase["spec"]["sources"][number];
interface Doc {
  id: string;
  body: { docsName: string; text: string; metadata?: Record<string, string> };
}

/** A source's documents, with the operator's document ids (a crawl: one per page URL). */
async function documentsOf(kb: KnowledgeBase, source: Source, scraper: ScraperClient | undefined): Promise<Doc[]> {
  if (source.text !== undefined) {
    return [{ id: docsIdFor(source.name, "text"), body: { docsName: source.name, text: source.text } }];
  }
  if (source.configMap) throw new Error("ConfigMap sources need a cluster");
  if (!scraper) throw new Error("the scraper is not running");
  const waitFor = kb.spec.scrapeOptions?.waitFor ? { waitFor: kb.spec.scrapeOptions.waitFor } : {};
  if (source.crawl) {
    const { url, limit, maxDepth, includePaths, excludePaths } = source.crawl;
    const request = { url, limit, maxDepth, includePaths, excludePaths, scrapeOptions: waitFor };
    const pages = await crawlPages(scraper, request);
    return pages.map((p) => ({
      id: docsIdFor(source.name, "crawl", p.url),
      body: { docsName: `${source.name}/${p.url}`, text: p.markdown, metadata: { sourceURL: p.url } },
    }));
  }
  const url = source.url as string;
  const page = await scraper.scrape(url, { pageOptions: waitFor });
  return [
    {
      id: docsIdFor(source.name, "url", url),
      body: { docsName: source.name, text: page.markdown, metadata: { sourceURL: url } },
    },
  ];
}

export async function ingestKnowledgeBase(
  kb: KnowledgeBase,
  deps: { search: SearchClient; scraper: ScraperClient | undefined },
): Promise<IngestSummary> {
  const knowledgeId = knowledgeIdOf(kb);
  // The same id in two namespaces is two knowledge bases: the documents API takes both.
  const ref = { namespace: kb.metadata.namespace || "default", knowledgeId };
  await deps.search.ensureKnowledgeBase(ref, kbSettings(kb));
  const summary: IngestSummary = { knowledgeId, documents: 0, chunks: 0, failures: [] };
  for (const source of kb.spec.sources) {
    try {
      for (const doc of await documentsOf(kb, source, deps.scraper)) {
        const result = await deps.search.upsertDocument(ref, doc.id, doc.body);
        summary.documents += 1;
        summary.chunks += result.chunks;
      }
    } catch (err) {
      summary.failures.push(`${source.name}: ${(err as Error).message}`);
    }
  }
  // A changed model is built beside the previous one (kept in the data dir): switch to it once
  // every source is in, the uploads carried into it first; with a failure the previous one keeps
  // answering until the next start.
  if (summary.failures.length === 0) {
    await deps.search.carryUploads(ref);
    await deps.search.switchKnowledgeBase(ref);
  }
  return summary;
}
