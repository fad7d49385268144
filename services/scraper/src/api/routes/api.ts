// The scraper's API as one encapsulated plugin: the key check (AUTH_ENABLED with API_KEY, reference
// 5) is an onRequest hook of this plugin's own context, so it runs for the routes registered here
// (scrape, bulk, web search, and crawl, batch and map of jobs.ts) and no others: GET /health, /openapi.json and the reference page stay
// outside it, without a key, and no path is compared by string. The reference gives the scraper no
// version prefix, so the plugin has none.

import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { apiKeyCheck } from "../../api-key.ts";
import { ScraperError } from "../../errors.ts";
import { type JobRoutesOptions, jobRoutes } from "./jobs.ts";
import { type ScrapeRoutesOptions, scrapeRoutes } from "./scrape.ts";

export type ApiOptions = ScrapeRoutesOptions & JobRoutesOptions;

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
  await app.register(jobRoutes, options);
};
