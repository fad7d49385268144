// Standalone ingestion: what the operator's KnowledgeBase reconciler does in a cluster, once at
// start. Inline texts go straight to the search service's documents API; URL sources are fetched
// through the scraper first. A source that fails is reported and skipped, never fatal.

import { docsIdFor, kbSettings } from "@capstan/operator/translate";
import type { KnowledgeBase } from "@capstan/shared/api";
import { knowledgeIdOf } from "@capstan/shared/api";
import type { ScraperClient } from "@capstan/shared/clients/scraper-client";
import type { SearchClient } from "@capstan/shared/clients/search-client";

export interface IngestSummary {
  knowledgeId: string;
  documents: number;
  chunks: number;
  failures: string[];
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
      let text: string;
      let kind: "text" | "url";
      if (source.text !== undefined) {
        text = source.text;
        kind = "text";
      } else if (source.url !== undefined) {
        if (!deps.scraper) throw new Error("the scraper is not running");
        const page = await deps.scraper.scrape(source.url, {
          pageOptions: { ...(kb.spec.scrapeOptions?.waitFor ? { waitFor: kb.spec.scrapeOptions.waitFor } : {}) },
        });
        text = page.markdown;
        kind = "url";
      } else {
        throw new Error("ConfigMap sources need a cluster");
      }
      const result = await deps.search.upsertDocument(ref, docsIdFor(source.name, kind, source.url ?? ""), {
        docsName: source.name,
        text,
        ...(source.url ? { metadata: { sourceURL: source.url } } : {}),
      });
      summary.documents += 1;
      summary.chunks += result.chunks;
    } catch (err) {
      summary.failures.push(`${source.name}: ${(err as Error).message}`);
    }
  }
  // A changed model is built beside the previous one (kept in the data dir): switch to it once
  // every source is in; with a failure the previous one keeps answering until the next start.
  if (summary.failures.length === 0) await deps.search.switchKnowledgeBase(ref);
  return summary;
}
