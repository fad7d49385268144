// Standalone ingestion: the operator's refresh (@capstan/operator/ingest, runRefresh), run once
// per KnowledgeBase at start and on a saved change, with the scraping section's scraper. The
// same module as in a cluster: the same document ids (a URL source by its name, a crawl's pages by
// URL), the same metadata (`source`), the same stamps, and the same closing prune (a page gone
// from a site, a source gone from the spec: their documents are deleted). A source that fails is
// reported and skipped, never fatal; its previous documents stay.
import { ClientScrape, newRefreshId, runRefresh, type ScrapeTarget } from "@capstan/operator/ingest";
import { kbSettings } from "@capstan/operator/translate";
import type { KnowledgeBase } from "@capstan/shared/api";
import { knowledgeIdOf } from "@capstan/shared/api";
import { type ScrapingSettingsInput, scrapingSettingsSchema } from "@capstan/shared/clients/scraper-client";
import type { SearchClient } from "@capstan/shared/clients/search-client";

export interface IngestSummary {
  knowledgeId: string;
  /** Documents written (or confirmed unchanged), of them embedded, and the chunks embedded. */
  documents: number;
  embedded: number;
  chunks: number;
  /** Documents of gone pages and sources deleted. */
  pruned: number;
  failures: string[];
}

const scrape = new ClientScrape();

function targetOf(settings: ScrapingSettingsInput): ScrapeTarget {
  const s = scrapingSettingsSchema.parse(settings);
  return {
    url: s.url,
    timeoutSeconds: s.timeout,
    maxRetries: s.max_retries,
    apiKey: s.api_key,
    via: `the scraper ${s.url}`,
  };
}

export async function ingestKnowledgeBase(
  kb: KnowledgeBase,
  deps: { search: SearchClient; scraping: ScrapingSettingsInput | undefined; now?: () => Date },
): Promise<IngestSummary> {
  const knowledgeId = knowledgeIdOf(kb);
  const now = deps.now ?? (() => new Date());
  // The same id in two namespaces is two knowledge bases: the documents API takes both.
  const ref = { namespace: kb.metadata.namespace || "default", knowledgeId };
  const info = await deps.search.ensureKnowledgeBase(ref, kbSettings(kb));
  const scraping = deps.scraping;
  const outcome = await runRefresh(
    {
      search: deps.search,
      scrape,
      target: async () => {
        if (!scraping) throw new Error("the scraper is not running");
        return targetOf(scraping);
      },
      configMap: async () => {
        throw new Error("ConfigMap sources need a cluster");
      },
      now,
    },
    // A changed model is built beside the previous one (kept in the data dir) and switched to once
    // every source is in, the uploads carried into it first.
    { ref, spec: kb.spec, refresh: newRefreshId(now()), buildingModel: info.building?.model },
  );
  return {
    knowledgeId,
    documents: outcome.documents,
    embedded: outcome.embedded,
    chunks: outcome.embeddedChunks,
    pruned: outcome.pruned ?? 0,
    failures: outcome.failed.map((f) => `${f.source}: ${f.message}`),
  };
}
