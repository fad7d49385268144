// The three spellings of the job routes, one table each: the scraper's own unprefixed routes
// (Firecrawl v1's names, as the seed serves them), /v1 (Firecrawl's v1 API, as firecrawl-js 1.x
// calls it) and /v2 (firecrawl-js 4.x, firecrawl-py 4.x). The routes (api/routes/jobs.ts) are
// written once; a dialect gives them their paths, request schemas with the translation to the
// scraper's own bodies, and the shape of the answers that differ.
import { z } from "zod";
import { scraperSchemas } from "../api/response-schemas.ts";
import {
  type BatchBody,
  batchBodySchema,
  type CrawlBody,
  crawlBodySchema,
  jobStatusSchema,
  type MapBody,
  mapBodySchema,
  mapResponseSchema,
} from "../crawl/schemas.ts";
import {
  batchOf,
  crawlOfV1,
  crawlOfV2,
  mapOfV2,
  v1BatchBody,
  v1CrawlBody,
  v2BatchBody,
  v2CrawlBody,
  v2MapBody,
} from "./wire.ts";

export interface JobDialect {
  /** Path prefix of the routes. */
  prefix: "" | "/v1" | "/v2";
  /** operationId prefix (unique ids across the three). */
  op: string;
  tag: string;
  crawlBody: z.ZodType;
  toCrawl: (body: never) => CrawlBody;
  batchBody: z.ZodType;
  toBatch: (body: never) => BatchBody;
  mapBody: z.ZodType;
  toMap: (body: never) => MapBody;
  mapResponse: z.ZodType;
  mapAnswer: (links: string[]) => unknown;
  status: z.ZodType;
  /** Firecrawl v1's clients read `next` while it is present: the last page leaves it out. */
  omitNullNext: boolean;
}

/** v1's status: `next` only while more results are there (firecrawl-js 1.x follows any `next`). */
export const v1JobStatusSchema = jobStatusSchema.extend({
  next: z.string().optional().describe("The next page of results; absent on the last one"),
});
scraperSchemas.add(v1JobStatusSchema, {
  id: "FirecrawlV1JobStatus",
  description: "Firecrawl v1: a job's progress and results",
});

export const v2MapResponseSchema = z.object({
  success: z.literal(true),
  links: z.array(z.object({ url: z.string() })),
});
scraperSchemas.add(v2MapResponseSchema, { id: "FirecrawlV2MapResponse", description: "Firecrawl v2: URLs of a site" });

const same = <T>(b: T) => b;

/** A Firecrawl version's dialect: its prefix, operationIds and tag follow from the version. */
function firecrawl(
  version: "v1" | "v2",
  parts: Omit<JobDialect, "prefix" | "op" | "tag" | "toBatch" | "mapAnswer" | "omitNullNext"> & {
    mapAnswer?: JobDialect["mapAnswer"];
  },
): JobDialect {
  return {
    prefix: `/${version}`,
    op: version,
    tag: `firecrawl-${version}`,
    toBatch: batchOf as (body: never) => BatchBody,
    mapAnswer: (links) => ({ success: true, links }),
    omitNullNext: version === "v1",
    ...parts,
  };
}

export const DIALECTS: JobDialect[] = [
  {
    prefix: "",
    op: "",
    tag: "jobs",
    crawlBody: crawlBodySchema,
    toCrawl: same,
    batchBody: batchBodySchema,
    toBatch: same,
    mapBody: mapBodySchema,
    toMap: same,
    mapResponse: mapResponseSchema,
    mapAnswer: (links) => ({ success: true, links }),
    status: jobStatusSchema,
    omitNullNext: false,
  },
  firecrawl("v1", {
    crawlBody: v1CrawlBody,
    toCrawl: crawlOfV1 as (body: never) => CrawlBody,
    batchBody: v1BatchBody,
    mapBody: mapBodySchema,
    toMap: same,
    mapResponse: mapResponseSchema,
    status: v1JobStatusSchema,
  }),
  firecrawl("v2", {
    crawlBody: v2CrawlBody,
    toCrawl: crawlOfV2 as (body: never) => CrawlBody,
    batchBody: v2BatchBody,
    mapBody: v2MapBody,
    toMap: mapOfV2 as (body: never) => MapBody,
    mapResponse: v2MapResponseSchema,
    mapAnswer: (links) => ({ success: true, links: links.map((url) => ({ url })) }),
    status: jobStatusSchema,
  }),
];
