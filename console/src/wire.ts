// The console's HTTP API on the wire, defined once: every route under /api declares its params,
// query, body and answers with these zod schemas (fastify-type-provider-zod validates requests and
// serialises answers with them), and the page (console/web/src/api.ts) parses every answer it
// reads with the same schemas and takes its types from here instead of declaring them again.
// A request a schema refuses is answered 400 in the console's error shape ({error: {code, message}},
// http-errors.ts). Checks that need the API server or the CRD's own schema (names, specs) stay in
// the routes and answer 422 in words, as before.
//
// The page imports this file too, so it must stay browser-safe: zod and @capstan/shared/api's
// schemas (which the page already imports), nothing else.
import { usageRowSchema } from "@capstan/shared/api";
import { z } from "zod";

// ---- Requests ------------------------------------------------------------------------------

/** /api/namespaces/:ns/... (the name is checked as a Kubernetes name by the route: 422 in words). */
export const nsParams = z.object({ ns: z.string() });
/** /api/namespaces/:ns/<kind>/:name/... */
export const nsNameParams = z.object({ ns: z.string(), name: z.string() });

/** POST /api/session: sign in with a Kubernetes bearer token. */
export const signInBody = z.object({ token: z.string().trim().min(1, "paste a token").max(16_384) });

/** POST .../accesschannels, .../searchkeys, .../knowledgebases: the spec is checked by the CRD's schema. */
export const createBody = z.object({ name: z.string(), spec: z.record(z.string(), z.unknown()) });
export type CreateBody = z.infer<typeof createBody>;

/** PATCH .../accesschannels/:name: QPM and expiry (null removes the expiry). */
export const channelEditBody = z.object({
  qpm: z.int().optional(),
  expiresAt: z.string().nullable().optional(),
});

/** POST .../key: "Add key" (no body, or rotate false) or "Rotate key" (rotate true). */
export const keyBody = z.object({ rotate: z.boolean().optional() }).optional();

/** POST .../knowledgebases/:name/search: "try a search". */
export const trySearchBody = z.object({
  text: z.string().trim().min(1, "type what to search for").max(2000),
  maxResults: z.int().min(1).max(50).default(5),
  minSimilarity: z.number().min(0).max(1).default(0.3),
});

/** POST .../agents/:name/chat: "try a chat" through a channel that serves the agent. */
export const chatBody = z.object({
  channel: z.string().min(1, "pick a channel"),
  message: z.string().trim().min(1, "type a message").max(8000),
});

/** POST .../scrapers/:name/scrape: "try a scrape". */
export const scrapeBody = z.object({
  url: z.url({ protocol: /^https?$/, error: "an http(s) URL" }),
  onlyMainContent: z.boolean().default(true),
});

/** POST .../knowledgebases/:name/documents?fileName=…: the file itself is the body. */
export const uploadQuery = z.object({ fileName: z.string().min(1, "fileName is empty").max(200) });

/** GET .../usage/hourly?hours=: at most 90 days (a larger number is read as 90 days). */
export const hourlyQuery = z.object({
  hours: z.coerce.number().int("must be a whole number of hours").min(1, "must be at least 1").default(24),
});

/** What the page sends, as the routes' schemas take it (the page checks its bodies against these). */
export type SignInRequest = z.input<typeof signInBody>;
export type CreateRequest = z.input<typeof createBody>;
export type ChannelEditRequest = z.input<typeof channelEditBody>;
export type KeyRequest = z.input<typeof keyBody>;
export type TrySearchRequest = z.input<typeof trySearchBody>;
export type ChatRequest = z.input<typeof chatBody>;
export type ScrapeRequest = z.input<typeof scrapeBody>;

// ---- Answers -------------------------------------------------------------------------------

/** The Ready condition of a resource, as the lists show it (ready.ts). */
export const readySchema = z.object({ status: z.string(), reason: z.string(), message: z.string() });
export type Ready = z.infer<typeof readySchema>;

/** GET and POST /api/session. */
export const sessionInfoSchema = z.object({
  user: z.object({ username: z.string(), groups: z.array(z.string()) }),
  csrfToken: z.string(),
  defaultNamespace: z.string(),
});
export type SessionInfo = z.infer<typeof sessionInfoSchema>;

export const signedOutSchema = z.object({ signedOut: z.literal(true) });

export const VERBS = ["get", "list", "create", "patch", "delete"] as const;
/** GET .../permissions: per resource (plural), what the user may do in the namespace. */
export const permissionsSchema = z.record(z.string(), z.record(z.enum(VERBS), z.boolean()));
export type Permissions = z.infer<typeof permissionsSchema>;

/** A list endpoint's answer. */
export const itemsOf = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item) });

/** DELETE of a channel or search key: the name deleted. */
export const deletedSchema = z.object({ deleted: z.string() });

/** An access channel as the list and its page show it (never the key). */
export const channelRowSchema = z.object({
  name: z.string(),
  namespace: z.string().optional(),
  channelName: z.string(),
  agent: z.string().optional(),
  qpm: z.number(),
  expiresAt: z.string().nullable(),
  keepHistory: z.boolean(),
  keyPrefix: z.string().nullable(),
  endpoint: z.string().nullable(),
  keySupplied: z.boolean(),
  keyRevealed: z.boolean(),
  ready: readySchema,
  createdAt: z.string().optional(),
});
export type ChannelRow = z.infer<typeof channelRowSchema>;

/** A key shown once ("Add key", "Rotate key"), with where to use it. */
export const revealedKeySchema = z.object({ key: z.string(), keyPrefix: z.string(), endpoint: z.string().nullable() });
export type RevealedKey = z.infer<typeof revealedKeySchema>;

/** An Agent or a Scraper: its spec and status as the API server holds them. */
export const resourceRowSchema = z.object({
  name: z.string(),
  spec: z.record(z.string(), z.unknown()),
  status: z.record(z.string(), z.unknown()),
  ready: readySchema,
});
export type ResourceRow = z.infer<typeof resourceRowSchema>;

/** A search key as its list shows it, with rotation advice past 90 days. */
export const searchKeyRowSchema = z.object({
  name: z.string(),
  keyName: z.string(),
  knowledgeIds: z.array(z.string()),
  validFrom: z.string().nullable(),
  validUntil: z.string().nullable(),
  allowedCIDRs: z.array(z.string()),
  rotation: z.record(z.string(), z.unknown()).nullable(),
  keyPrefix: z.string().nullable(),
  endpoint: z.string().nullable(),
  keySupplied: z.boolean(),
  keyRevealed: z.boolean(),
  keyAgeDays: z.number(),
  rotationAdvised: z.boolean(),
  ready: readySchema,
});
export type SearchKeyRow = z.infer<typeof searchKeyRowSchema>;

/** A knowledge base with its sources and counts (the single view adds search's live counts). */
export const knowledgeRowSchema = z.object({
  name: z.string(),
  knowledgeId: z.string(),
  description: z.string(),
  sources: z.array(
    z.object({ name: z.string(), kind: z.enum(["url", "crawl", "configMap", "text"]), detail: z.string() }),
  ),
  documents: z.number(),
  chunks: z.number(),
  failures: z.number(),
  failedSources: z.array(z.string()),
  uploaded: z.number(),
  progress: z.string(),
  /** Documents uploaded through search's documents API (filled from search on the single view). */
  uploadedDocuments: z.array(z.object({ name: z.string(), chunks: z.number(), format: z.string() })),
  ready: readySchema,
});
export type KnowledgeRow = z.infer<typeof knowledgeRowSchema>;

/** One hit of "try a search": what the page shows of search's result (search sends more; kept). */
export const searchHitSchema = z.object({ docsName: z.string(), text: z.string(), score: z.number() }).loose();
export const searchHitsSchema = z.object({ results: z.array(searchHitSchema) });

/** "Try a chat": the agent's answer through the gateway. */
export const chatAnswerSchema = z.object({
  answer: z.string(),
  model: z.string().nullable(),
  usage: z.record(z.string(), z.number()).nullable(),
  ms: z.number(),
});

/** "Try a scrape": the page as Markdown. */
export const scrapeAnswerSchema = z.object({
  markdown: z.string(),
  title: z.string().optional(),
  statusCode: z.number().optional(),
  ms: z.number(),
});

const channelPointSchema = z.object({ requests: z.number(), throttled: z.number(), tokens: z.number() });
export type ChannelPoint = z.infer<typeof channelPointSchema>;
/** GET .../usage: the last hour's cumulative counters per channel the user may list. */
export const usageSchema = z.object({
  warning: z.string().nullable(),
  channels: z.array(z.string()),
  points: z.array(
    z.object({
      at: z.number(),
      latencySum: z.number(),
      latencyCount: z.number(),
      channels: z.record(z.string(), channelPointSchema),
    }),
  ),
});
export type Usage = z.infer<typeof usageSchema>;

/** GET .../usage/hourly: the gateway's rows (@capstan/shared/api), each channel by its name. */
export const hourlyUsageSchema = z.object({ hours: z.number(), rows: z.array(usageRowSchema) });
