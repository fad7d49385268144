// POST /v1/scrape and POST /v2/scrape: one page, with Firecrawl's request shape (formats,
// onlyMainContent, waitFor, timeout, headers at the top level) and answer ({success, data}),
// through the same ScrapeService as POST /scrape. The bodies and what they refuse are in
// firecrawl/wire.ts. Registered inside the API plugin (routes/api.ts): the key check covers them.
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { z } from "zod";
import { formatNames, scrapeInputOf, v1ScrapeBody, v2ScrapeBody } from "../../firecrawl/wire.ts";
import { bodyValidator } from "../../http-errors.ts";
import { errorResponses, scrapeResponseSchema } from "../response-schemas.ts";
import type { ScrapeInput, ScrapeService } from "../scrape-service.ts";
import { abortOnClose } from "./scrape.ts";

const VERSIONS = [
  {
    version: "v1",
    body: v1ScrapeBody as z.ZodType,
    summary: "Firecrawl v1: render one page and answer the formats asked for",
    input: (b: z.output<typeof v1ScrapeBody>) => scrapeInputOf(b, b.formats),
  },
  {
    version: "v2",
    body: v2ScrapeBody as z.ZodType,
    summary: "Firecrawl v2: render one page and answer the formats asked for (names or {type} objects)",
    input: (b: z.output<typeof v2ScrapeBody>) => scrapeInputOf({ ...b, formats: [] }, formatNames(b.formats)),
  },
] as const;

export const firecrawlScrapeRoutes: FastifyPluginAsync<{ service: ScrapeService }> = async (plain, { service }) => {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(bodyValidator);
  for (const v of VERSIONS) {
    app.post(
      `/${v.version}/scrape`,
      {
        schema: {
          operationId: `${v.version}Scrape`,
          summary: v.summary,
          tags: [`firecrawl-${v.version}`],
          security: [{ scraperKey: [] }],
          body: v.body,
          response: { 200: scrapeResponseSchema, ...errorResponses(400, 401, 403, 408, 413, 415, 500, 502, 503) },
        },
      },
      async (req, reply) => {
        const input: ScrapeInput = v.input(req.body as never);
        return { success: true as const, data: await service.scrape(input, { signal: abortOnClose(reply) }) };
      },
    );
  }
};
