// The internal documents API's wire shapes (search's internal port, the operator's and the
// standalone launcher's ingestion), defined once: the search service's routes declare their path
// params, query, body and answers with these schemas (Fastify's zod type provider validates
// requests and serialises answers with them), and SearchClient parses every answer with the same
// ones (documentsWire) instead of declaring its types again.
// Search is the one authority over a knowledge base's documents: each document ingested from a
// KnowledgeBase source carries that source's id, a hash of what was ingested, when its content
// was fetched, where from, and the refresh that last wrote or confirmed it. A refresh lists and
// prunes by source through these routes; the operator keeps no lists of its own.
import { z } from "zod";
import { KNOWLEDGE_ID_PATTERN } from "../api/common.ts";
import { envelopeSchema } from "./search-wire.ts";

const count = z.int().min(0);

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** A knowledge id as clients know it (kb_...), never the store key search keeps it under. */
export const knowledgeIdSchema = z.string().regex(KNOWLEDGE_ID_PATTERN, "must be a knowledge id of the form kb_<id>");

/** A document's id in a knowledge base: no slashes (it is a path segment) and no controls. */
export const docsIdSchema = z
  .string()
  .regex(/^[^\s/\\\p{Cc}][^/\\\p{Cc}]{0,511}$/u, "must be 1-512 characters without slashes or controls");

/** /internal/v1/namespaces/:namespace/knowledge-bases/:knowledgeId (the same id in two namespaces is two). */
export const knowledgeBaseParamsSchema = z.object({
  namespace: z.string().regex(DNS_LABEL, "must be a Kubernetes namespace name"),
  knowledgeId: knowledgeIdSchema,
});
export type KnowledgeBaseRef = z.infer<typeof knowledgeBaseParamsSchema>;

/** .../knowledge-bases/:knowledgeId/documents/:docsId. */
export const documentParamsSchema = knowledgeBaseParamsSchema.extend({ docsId: docsIdSchema });

/** PUT .../knowledge-bases/:id: the collection's settings (each checked by search against the KnowledgeBase schema). */
export const knowledgeBaseSettingsSchema = z.object({
  embedding: z
    .object({
      provider: z.enum(["local", "openai"]).optional(),
      model: z.string().optional(),
      baseURL: z.string().optional(),
      dimensions: z.int().optional(),
    })
    .loose() // search checks the whole of it against the KnowledgeBase's embedding schema
    .optional(),
  chunking: z.object({ size: z.int().optional(), overlap: z.int().optional() }).optional(),
});
export type KnowledgeBaseSettings = z.infer<typeof knowledgeBaseSettingsSchema>;

const vectorsSchema = z.object({
  backend: z.enum(["embedded", "qdrant"]),
  size: z.int(),
  distance: z.string(),
  hnsw: z.object({ m: z.int(), payloadM: z.int().optional(), efConstruct: z.int(), efSearch: z.int() }),
});

/** A knowledge base's counts and vector sets, all from one read (PUT and GET answer it). */
export const knowledgeBaseInfoSchema = z.object({
  knowledgeId: z.string(),
  documents: count,
  chunks: count,
  model: z.string().optional(),
  dimensions: z.int().optional(),
  chunking: z.object({ size: z.int(), overlap: z.int() }).optional(),
  /** After a model change: the vector set being built beside the serving one, and its counts so far. */
  building: z.object({ model: z.string(), dimensions: z.int(), documents: count, chunks: count }).optional(),
  /** Of `documents` and `chunks`: those uploaded through the public documents API (not from sources). */
  uploaded: z.object({ documents: count, chunks: count }).optional(),
  /** Where the serving vector set's vectors live and how they are indexed. */
  collection: z.string().optional(),
  vectors: vectorsSchema.optional(),
});
export type KnowledgeBaseInfo = z.infer<typeof knowledgeBaseInfoSchema>;

/** A KnowledgeBase source's id, a refresh's id: short tokens. */
const token = z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/, "must be 1-128 letters, digits or _.:-");

/** PUT .../documents/:docsId. */
export const documentInputSchema = z.object({
  docsName: z.string().min(1, "must be a non-empty string").max(1024),
  text: z.string(),
  metadata: z.record(z.string().max(128), z.union([z.string(), z.number(), z.boolean()])).optional(),
  /** The KnowledgeBase source it came from (absent: not from a source). */
  source: token.optional(),
  /** Where its content was fetched from (a page URL). */
  origin: z.string().max(4096).optional(),
  /** When its content was fetched (RFC 3339). */
  fetchedAt: z.iso.datetime({ offset: true }).optional(),
  /** The refresh writing it: a document the refresh confirms unchanged is stamped with it too. */
  refresh: token.optional(),
});
export type DocumentInput = z.infer<typeof documentInputSchema>;

export const upsertResultSchema = z.object({
  knowledgeId: z.string(),
  docsId: z.string(),
  chunks: count,
  /** False when the same content was there already (nothing embedded: only its stamps moved). */
  embedded: z.boolean(),
  /** Hash of what was ingested: name, text, metadata and the chunking that cut it. */
  contentHash: z.string(),
});
export type UpsertResult = z.infer<typeof upsertResultSchema>;

/** GET .../documents?source=&from=&limit=: one page of the vector set written to. */
export const documentListQuerySchema = z.object({
  source: token.optional(),
  from: z.string().min(1).max(512).optional(),
  limit: z.coerce.number().int("must be an integer").min(1, "must be at least 1").max(1000).default(256),
});
export type DocumentListQuery = z.input<typeof documentListQuerySchema>;

export const ingestedDocumentSchema = z.object({
  docsId: z.string(),
  docsName: z.string(),
  chunks: count,
  source: z.string().optional(),
  contentHash: z.string().optional(),
  fetchedAt: z.string().optional(),
  origin: z.string().optional(),
  refresh: z.string().optional(),
});
export type IngestedDocument = z.infer<typeof ingestedDocumentSchema>;

export const documentListSchema = z.object({
  knowledgeId: z.string(),
  documents: z.array(ingestedDocumentSchema),
  /** Where the next page starts; absent after the last one. */
  next: z.string().optional(),
});
export type DocumentList = z.infer<typeof documentListSchema>;

/**
 * POST .../prune, at the end of a refresh, in the vector set written to: deletes the documents of
 * sources no longer in `sources`, the documents of the `complete` sources that `refresh` neither
 * wrote nor confirmed (pages gone from a site), and the `legacy` documents (written before
 * documents carried their source) that `refresh` did not write. Uploads are never touched.
 */
export const pruneBodySchema = z.object({
  refresh: token,
  sources: z.array(token).max(1000),
  complete: z.array(token).max(1000),
  legacy: z.array(z.string().min(1).max(512)).max(20_000).default([]),
});
export type PruneRequest = z.input<typeof pruneBodySchema>;

export const pruneResultSchema = z.object({ knowledgeId: z.string(), deleted: count });
export type PruneResult = z.infer<typeof pruneResultSchema>;

/** POST .../switch: with model, only if the vector set being built is that model's. */
export const switchBodySchema = z.object({ model: z.string().min(1).max(256).optional() });

export const switchResultSchema = z.object({
  knowledgeId: z.string(),
  model: z.string(),
  dimensions: z.int(),
  switched: z.boolean(),
});

export const carryBodySchema = z.object({
  model: z.string().min(1).max(256).optional(),
  from: z.string().min(1).max(512).optional(),
  limit: z.int("must be an integer").min(1, "must be at least 1").max(256, "must be at most 256").default(16),
});

/** POST .../carry-uploads: one page of the uploads carried into the vector set being built. */
export const carryPageSchema = z.object({
  knowledgeId: z.string(),
  model: z.string(),
  uploads: count,
  carried: count,
  chunks: count,
  next: z.string().optional(),
});

export const deleteKnowledgeBaseResultSchema = z.object({ knowledgeId: z.string(), deleted: z.boolean() });
export const deleteDocumentResultSchema = z.object({ knowledgeId: z.string(), docsId: z.string(), deleted: count });

const counts = z.object({ documents: count, chunks: count });

/** GET /v1/knowledge-bases/:knowledgeId/documents (the public API, with a search key): the uploads. */
export const uploadListSchema = z.object({
  knowledgeId: z.string(),
  documents: z.array(
    z.object({
      name: z.string(),
      chunks: count,
      format: z.string(),
      title: z.string().optional(),
      uploadedAt: z.string().optional(),
    }),
  ),
  uploaded: counts.describe("the uploaded documents and their chunks"),
  total: counts.describe("every document of the knowledge base: its sources' and the uploaded ones"),
});
export type UploadList = z.infer<typeof uploadListSchema>;

/** The envelopes SearchClient checks answers against. */
export const documentsWire = {
  info: envelopeSchema(knowledgeBaseInfoSchema),
  upsert: envelopeSchema(upsertResultSchema),
  list: envelopeSchema(documentListSchema),
  prune: envelopeSchema(pruneResultSchema),
  switch: envelopeSchema(switchResultSchema),
  carry: envelopeSchema(carryPageSchema),
  deleteKnowledgeBase: envelopeSchema(deleteKnowledgeBaseResultSchema),
  deleteDocument: envelopeSchema(deleteDocumentResultSchema),
  uploads: envelopeSchema(uploadListSchema),
};
