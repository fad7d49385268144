export { addressRange, denyReason, isPublicAddress, parseAllowList } from "@capstan/shared/egress";
export { type AppDeps, type BulkEntry, buildApp } from "./api/app.ts";
export { httpRenderClient, type RenderClient } from "./api/render-client.ts";
export type { ScrapeData } from "./api/scrape-service.ts";
export {
  loadScraperConfig,
  SCRAPER_ENV,
  SCRAPER_STRICT_ENV,
  type ScraperConfig,
  scraperConfig,
  scraperConfigSchema,
} from "./config.ts";
export { SiteFiles } from "./crawl/site-files.ts";
export { ERRORS, type ErrorCode, ScraperError } from "./errors.ts";
export { apiMetrics } from "./metrics.ts";
export { buildRenderService, type RenderService, type RenderServiceDeps } from "./render/app.ts";
export type { RenderProbe, RenderRequest, RenderResponse } from "./render/wire.ts";
export { parseTargetUrl, SsrfGuard } from "./ssrf/guard.ts";
