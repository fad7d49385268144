// The scraper's API as one encapsulated plugin: the key check (AUTH_ENABLED with API_KEY, reference
// 5) is an onRequest hook of this plugin's own context, so it runs for the routes registered here
// (scrape, bulk, web search, and crawl, batch and map of jobs.ts) and no others: GET /health, /openapi.json and the reference page stay
// outside it, without a key, and no path is compared by string. The reference gives the scraper no
// version prefix, so the plugin has none.

import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { apiKeyCheck } from "../../api-key.ts";
import { ScraperError } from "../../errors.ts";
import { DIALECTS } from "../../firecrawl/dialects.ts";
import { firecrawlScrapeRoutes } from "./firecrawl-scrape.ts";
import { type JobRoutesOptions, jobRoutes } from "./jobs.ts";
import { type ScrapeRoutesOptions, scrapeRoutes } from "./scrape.ts";

export type ApiOptions = ScrapeRoutesOptions & Omit<JobRoutesOptions, "dialect">;

export const scraperApi: FastifyPluginAsync<ApiOptions> = async (app, options) => {
  const { config } = options;
  const keyOk = apiKeyCheck(config.apiKey);
  if (config.authEnabled) {
    app.addHook("onRequest", async function requireScraperKey(req: FastifyRequest, reply: FastifyReply) {
      if (!keyOk?.(req.headers.authorization)) {
        reply.header("www-authenticate", 'Bearer realm="scraper"');
        throw new ScraperError("UNAUTHORIZED");
      }
    });
  }
  await app.register(scrapeRoutes, options);
  // The job routes three times: unprefixed (the scraper's own), /v1 and /v2 (Firecrawl's SDKs).
  for (const dialect of DIALECTS) await app.register(jobRoutes, { ...options, dialect });
  await app.register(firecrawlScrapeRoutes, { service: options.service });
};
