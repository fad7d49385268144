// Request bodies of the scraper API (reference 2.9, plus documented extras). Unknown fields
// are ignored so Firecrawl clients that send more options keep working.
import { pageOptionsSchema } from "@capstan/shared/clients/scraper-wire";
import { z } from "zod";

// POST /scrape's and /scrape/bulk's bodies are the scraper's wire with its client, defined once.
export {
  bulkBodySchema,
  extractorOptionsSchema,
  pageOptionsObject,
  pageOptionsSchema,
  scrapeBodySchema,
  url,
} from "@capstan/shared/clients/scraper-wire";

export const searchBodySchema = z.object({
  query: z.string().min(1).max(1000),
  limit: z.int().min(1).max(20).default(5),
  scrape: z.boolean().default(false),
  pageOptions: pageOptionsSchema,
});

export type PageOptions = z.output<typeof pageOptionsSchema>;
