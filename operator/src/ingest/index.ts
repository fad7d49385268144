// The ingestion module other entry points share with the operator: standalone mode
// (scripts/standalone/ingest.ts) runs the same refresh, through the same scraper client, with the
// same document ids, metadata and closing prune.
export { newRefreshId, type RefreshDeps, type RefreshOutcome, type RefreshRun, runRefresh } from "./refresh.ts";
export { ClientScrape, type Scrape, type ScrapeTarget } from "./scrape.ts";
