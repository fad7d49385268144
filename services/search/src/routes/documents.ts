// The internal documents API used by ingestion (the operator, the standalone launcher), guarded
// by the internal token. A knowledge base is addressed by its namespace and id
// (/internal/v1/namespaces/:namespace/knowledge-bases/:knowledgeId): its vectors live under the
// store key `<namespace>.<kb_id>`, never shared with the same id in another namespace. Responses use the same envelope as search. A model change builds a new
// generation beside the serving one (PUT answers with both); POST .../carry-uploads copies the
// uploads into it a page at a time (carry-uploads.ts), then POST .../switch makes it serve.
// Schema first: every body is parsed, and every answer typed, by the wire schemas the client
// checks answers against (@capstan/shared/clients/documents-wire). A KnowledgeBase refresh lists
// the documents of a source (GET .../documents?source=) and ends with one prune (POST .../prune).
import {
  carryBodySchema,
  type DocumentList,
  documentInputSchema,
  documentListQuerySchema,
  type KnowledgeBaseInfo,
  knowledgeBaseSettingsSchema,
  type PruneResult,
  pruneBodySchema,
  type UpsertResult,
} from "@capstan/shared/clients/documents-wire";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { z } from "zod";
import type { SearchKeyAuthenticator } from "../auth/search-keys.ts";
import { carryUploads } from "../carry-uploads.ts";
import type { SearchConfig } from "../config.ts";
import { ok, SearchError } from "../errors.ts";
import type { Ingester } from "../ingest.ts";
import { docsIdSchema, knowledgeIdParam, parseBody } from "../schemas.ts";
import { type CollectionInfo, stampsOf, storeKey, type VectorStore } from "../store/types.ts";
import { UPLOAD_PREFIX } from "./public-documents.ts";

export interface DocumentRoutesDeps {
  config: SearchConfig;
  auth: SearchKeyAuthenticator;
  ingester: Ingester;
  store: VectorStore;
}

interface Params {
  namespace: string;
  knowledgeId: string;
  docsId?: string;
}

const switchBody = z.object({ model: z.string().min(1).max(256).optional() });

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The path's knowledge base: its namespace, id (kb_...) and store key; and the document id. */
function params(req: FastifyRequest): { namespace: string; id: string; knowledgeId: string; docsId: string } {
  const p = req.params as Params;
  if (!DNS_LABEL.test(p.namespace)) {
    throw new SearchError("SEARCH_ERR_BODY_INVALID", { detail: "namespace: must be a Kubernetes namespace name" });
  }
  const kb = knowledgeIdParam.safeParse(p.knowledgeId);
  if (!kb.success)
    throw new SearchError("SEARCH_ERR_BODY_INVALID", { detail: `knowledgeId: ${kb.error.issues[0]?.message}` });
  const ids = { namespace: p.namespace, id: kb.data, knowledgeId: storeKey(p.namespace, kb.data) };
  if (p.docsId === undefined) return { ...ids, docsId: "" };
  const doc = docsIdSchema.safeParse(p.docsId);
  if (!doc.success)
    throw new SearchError("SEARCH_ERR_BODY_INVALID", { detail: `docsId: ${doc.error.issues[0]?.message}` });
  return { ...ids, docsId: doc.data };
}

/** The documents API, registered at /internal/v1 (served on the internal port only). */
export const documentRoutes: FastifyPluginAsync<DocumentRoutesDeps> = async (app, options) => {
  // Fastify hands a plugin its registration options, `prefix` included.
  const { prefix: _prefix, ...d } = options as DocumentRoutesDeps & { prefix?: string };
  const base = "/namespaces/:namespace/knowledge-bases/:knowledgeId";
  // Internal (the operator's ingestion, on the internal port): not in the published contract.
  app.addHook("onRoute", (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  // The internal token is checked when the request arrives, before its body (up to 16 MiB) is
  // read or parsed; a refused request also closes the connection, so the rest of its body is
  // not received either. The hook belongs to this plugin's context: it runs for these routes only.
  app.addHook("onRequest", (req, reply, done) => {
    try {
      d.auth.authenticateInternal(req.headers.authorization);
    } catch (err) {
      reply.header("connection", "close");
      return done(err as Error);
    }
    done();
  });

  // The knowledge base itself.
  app.put(base, (req) => ensureKnowledgeBase(d, req));
  app.get(base, (req) => describeKnowledgeBase(d, req));
  app.post(`${base}/switch`, (req) => switchGeneration(d, req));
  app.post(`${base}/carry-uploads`, (req) => carryUploadsPage(d, req));
  app.delete(base, (req) => dropKnowledgeBase(d, req));
  // Its documents.
  app.put(`${base}/documents/:docsId`, { bodyLimit: d.config.documents.maxBodyBytes }, (req) => upsertDocument(d, req));
  app.get(`${base}/documents`, (req) => listDocuments(d, req));
  app.post(`${base}/prune`, (req) => pruneDocuments(d, req));
  app.delete(`${base}/documents/:docsId`, (req) => deleteDocument(d, req));
};

/** PUT: creates the knowledge base's collection (or checks its settings) and answers what it holds. */
async function ensureKnowledgeBase(d: DocumentRoutesDeps, req: FastifyRequest) {
  const { namespace, id, knowledgeId } = params(req);
  await d.ingester.adoptLegacy(namespace, id);
  await d.ingester.ensure(knowledgeId, parseBody(knowledgeBaseSettingsSchema, req.body ?? {}));
  const gens = await d.store.generations(knowledgeId);
  if (!gens) throw new SearchError("SEARCH_ERR_STORE", { detail: `collection of ${knowledgeId} not created` });
  const info = gens.serving;
  const stats = (await d.store.stats(knowledgeId)) ?? { documents: 0, chunks: 0 };
  return ok<KnowledgeBaseInfo>({
    knowledgeId: id,
    model: info.model,
    dimensions: info.dimensions,
    chunking: info.chunking,
    ...stats,
    ...whereStored(d.store, info),
    ...(await building(d.store, gens.building)),
  });
}

/** GET: what the knowledge base holds, its uploads apart, and the generation being built if any. */
async function describeKnowledgeBase(d: DocumentRoutesDeps, req: FastifyRequest) {
  const { namespace, id, knowledgeId } = params(req);
  await d.ingester.adoptLegacy(namespace, id);
  const gens = await d.store.generations(knowledgeId);
  const stats = gens && (await d.store.stats(knowledgeId));
  if (!gens || !stats) throw new SearchError("SEARCH_ERR_NOT_FOUND", { detail: `no collection for ${id}` });
  const { model, dimensions } = gens.serving;
  // The serving generation's model and collection come from this one read, so the KnowledgeBase
  // status taken from it never names one generation's model beside another's collection.
  // The documents uploaded through the public API, counted apart (when there are any): the
  // operator keeps them out of what its sources produce (status.uploaded).
  const docs = await d.store.documents(knowledgeId, UPLOAD_PREFIX);
  const uploaded = { documents: docs.length, chunks: docs.reduce((n, doc) => n + doc.chunks, 0) };
  return ok<KnowledgeBaseInfo>({
    knowledgeId: id,
    model,
    dimensions,
    ...stats,
    ...whereStored(d.store, gens.serving),
    ...(docs.length > 0 ? { uploaded } : {}),
    ...(await building(d.store, gens.building)),
  });
}

/**
 * Makes the generation being built serve (after its last document); with {model}, only if it is
 * that model's. Asked again after it happened (a lost answer), it answers switched: false.
 */
async function switchGeneration(d: DocumentRoutesDeps, req: FastifyRequest) {
  const { id, knowledgeId } = params(req);
  const { model } = parseBody(switchBody, req.body ?? {});
  const switched = await d.ingester.switchGeneration(knowledgeId, model);
  const serving = switched ?? (await d.store.getCollection(knowledgeId));
  if (!serving || (!switched && model !== undefined && serving.model !== model)) {
    throw new SearchError("SEARCH_ERR_NOT_FOUND", {
      detail: `no generation ${model ? `of model ${model} ` : ""}being built for ${id}`,
    });
  }
  return ok({
    knowledgeId: id,
    model: serving.model,
    dimensions: serving.dimensions,
    switched: switched !== undefined,
  });
}

/**
 * Copies the serving generation's uploads missing from the one being built into it, one page
 * (`limit` uploads at most) a call; the caller repeats with from = next until there is none.
 */
async function carryUploadsPage(d: DocumentRoutesDeps, req: FastifyRequest) {
  const { id, knowledgeId } = params(req);
  const body = parseBody(carryBodySchema, req.body ?? {});
  return ok({ knowledgeId: id, ...(await carryUploads(d, knowledgeId, body)) });
}

/** DELETE: the knowledge base and all its vectors. */
async function dropKnowledgeBase(d: DocumentRoutesDeps, req: FastifyRequest) {
  const { id, knowledgeId } = params(req);
  const deleted = await d.ingester.drop(knowledgeId);
  return ok({ knowledgeId: id, deleted });
}

/** PUT a document: chunked, embedded and stored (nothing embedded when its content is unchanged). */
async function upsertDocument(d: DocumentRoutesDeps, req: FastifyRequest) {
  const { id, knowledgeId, docsId } = params(req);
  const body = parseBody(documentInputSchema, req.body);
  const outcome = await d.ingester.upsert(knowledgeId, docsId, body);
  return ok<UpsertResult>({ knowledgeId: id, docsId, ...outcome });
}

/** The documents of the generation written to (of one source, with ?source=), a page at a time. */
async function listDocuments(d: DocumentRoutesDeps, req: FastifyRequest) {
  const { id, knowledgeId } = params(req);
  const q = parseBody(documentListQuerySchema, req.query ?? {}, "query");
  const page = await d.store.ingestedPage(knowledgeId, q.source, q.from, q.limit);
  const documents = page.documents.map((doc) => ({
    docsId: doc.docsId,
    docsName: doc.docsName,
    chunks: doc.chunks,
    ...stampsOf(doc),
  }));
  return ok<DocumentList>({ knowledgeId: id, documents, ...(page.next !== undefined ? { next: page.next } : {}) });
}

/** The end of a refresh: deletes what its sources no longer have (see pruneBodySchema). */
async function pruneDocuments(d: DocumentRoutesDeps, req: FastifyRequest) {
  const { id, knowledgeId } = params(req);
  const rule = parseBody(pruneBodySchema, req.body ?? {});
  const deleted = await d.ingester.prune(knowledgeId, rule);
  return ok<PruneResult>({ knowledgeId: id, deleted });
}

/** DELETE a document and its chunks. */
async function deleteDocument(d: DocumentRoutesDeps, req: FastifyRequest) {
  const { id, knowledgeId, docsId } = params(req);
  const deleted = await d.ingester.deleteDocument(knowledgeId, docsId);
  return ok({ knowledgeId: id, docsId, deleted });
}

/** Where a generation's vectors live and how they are indexed (the KnowledgeBase shows this in its status). */
function whereStored(store: VectorStore, info: CollectionInfo) {
  const l = store.layout(info);
  return {
    collection: l.backend === "qdrant" ? `${l.collection}/${l.tenant}` : l.collection,
    vectors: { backend: l.backend, size: l.vectorSize, distance: l.distance, hnsw: l.hnsw },
  };
}

/** The generation being built, with its counts so far: the KnowledgeBase status shows its progress. */
async function building(store: VectorStore, info: CollectionInfo | undefined) {
  if (!info) return {};
  const stats = (await store.stats(info.knowledgeId, "building")) ?? { documents: 0, chunks: 0 };
  return { building: { model: info.model, dimensions: info.dimensions, ...stats } };
}
