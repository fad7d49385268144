// The internal documents API used by ingestion (the operator, the standalone launcher), guarded
// by the internal token. A knowledge base is addressed by its namespace and id
// (/internal/v1/namespaces/:namespace/knowledge-bases/:knowledgeId): its vectors live under the
// store key `<namespace>.<kb_id>`, never shared with the same id in another namespace. Responses
// use the same envelope as search. A model change builds a new vector set beside the serving one
// (PUT answers with both); POST .../carry-uploads copies the uploads into it a page at a time
// (carry-uploads.ts), then POST .../switch makes it serve. A KnowledgeBase refresh lists the
// documents of a source (GET .../documents?source=) and ends with one prune (POST .../prune).
// Schema first: every route declares its params, query, body and answer with the wire schemas of
// @capstan/shared/clients/documents-wire, which SearchClient parses the answers with too; a bad
// field is refused with the envelope's 400 naming it (searchValidator).
import {
  carryBodySchema,
  documentInputSchema,
  documentListQuerySchema,
  documentParamsSchema,
  documentsWire,
  type KnowledgeBaseRef,
  knowledgeBaseParamsSchema,
  knowledgeBaseSettingsSchema,
  pruneBodySchema,
  switchBodySchema,
} from "@capstan/shared/clients/documents-wire";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { z } from "zod";
import type { SearchKeyAuthenticator } from "../auth/search-keys.ts";
import { carryUploads } from "../carry-uploads.ts";
import type { SearchConfig } from "../config.ts";
import { ok, SearchError } from "../errors.ts";
import type { Ingester } from "../ingest.ts";
import { searchValidator } from "../schemas.ts";
import { type CollectionInfo, stampsOf, storeKey, type VectorStore } from "../store/types.ts";
import { UPLOAD_PREFIX } from "./public-documents.ts";
import { errorResponses } from "./search-schemas.ts";

export interface DocumentRoutesDeps {
  config: SearchConfig;
  auth: SearchKeyAuthenticator;
  ingester: Ingester;
  store: VectorStore;
}

/** The refusals every route of this API may answer (in the envelope, data null). */
const refusals = errorResponses(400, 401, 404, 405, 413, 415, 500, 503);

/** A route's schema: its params, the body or query it takes, and its answer. */
function route<P extends z.ZodType, R extends z.ZodType>(params: P, answer: R) {
  return { params, response: { 200: answer, ...refusals } };
}

/** The knowledge base of a path: its namespace, its id (kb_...) and the store key of its vectors. */
function target(p: KnowledgeBaseRef) {
  return { namespace: p.namespace, knowledgeId: p.knowledgeId, key: storeKey(p.namespace, p.knowledgeId) };
}

/** The documents API, registered at /internal/v1 (served on the internal port only). */
export const documentRoutes: FastifyPluginAsync<DocumentRoutesDeps> = async (plain, options) => {
  // Fastify hands a plugin its registration options, `prefix` included.
  const { prefix: _prefix, ...d } = options as DocumentRoutesDeps & { prefix?: string };
  const app = plain.withTypeProvider<ZodTypeProvider>();
  const base = "/namespaces/:namespace/knowledge-bases/:knowledgeId";
  const kb = knowledgeBaseParamsSchema;
  const doc = documentParamsSchema;
  // Bad params, query or body: 400 naming the field; a route whose body is all optional takes none.
  app.setValidatorCompiler(searchValidator({ emptyBody: {} }));
  // Internal (the operator's ingestion, on the internal port): documented in the internal port's
  // document, every route with the internal token.
  app.addHook("onRoute", (r) => {
    r.schema = { tags: ["documents"], security: [{ internalToken: [] }], ...r.schema };
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
  const settings = { ...route(kb, documentsWire.info), body: knowledgeBaseSettingsSchema };
  app.put(base, { schema: settings }, (req) => ensureKnowledgeBase(d, req.params, req.body));
  app.get(base, { schema: route(kb, documentsWire.info) }, (req) => describeKnowledgeBase(d, req.params));
  const sw = { ...route(kb, documentsWire.switch), body: switchBodySchema };
  app.post(`${base}/switch`, { schema: sw }, (req) => switchVectorSet(d, req.params, req.body.model));
  const carry = { ...route(kb, documentsWire.carry), body: carryBodySchema };
  app.post(`${base}/carry-uploads`, { schema: carry }, async (req) => {
    const { knowledgeId, key } = target(req.params);
    return ok({ knowledgeId, ...(await carryUploads(d, key, req.body)) });
  });
  app.delete(base, { schema: route(kb, documentsWire.deleteKnowledgeBase) }, async (req) => {
    const { knowledgeId, key } = target(req.params);
    return ok({ knowledgeId, deleted: await d.ingester.drop(key) });
  });

  // Its documents.
  const upsert = { ...route(doc, documentsWire.upsert), body: documentInputSchema };
  const bodyLimit = d.config.documents.maxBodyBytes;
  app.put(`${base}/documents/:docsId`, { schema: upsert, bodyLimit }, async (req) => {
    const { knowledgeId, key } = target(req.params);
    const { docsId } = req.params;
    return ok({ knowledgeId, docsId, ...(await d.ingester.upsert(key, docsId, req.body)) });
  });
  const list = { ...route(kb, documentsWire.list), querystring: documentListQuerySchema };
  app.get(`${base}/documents`, { schema: list }, (req) => listDocuments(d, req.params, req.query));
  const prune = { ...route(kb, documentsWire.prune), body: pruneBodySchema };
  app.post(`${base}/prune`, { schema: prune }, async (req) => {
    // The end of a refresh: deletes what its sources no longer have (see pruneBodySchema).
    const { knowledgeId, key } = target(req.params);
    return ok({ knowledgeId, deleted: await d.ingester.prune(key, req.body) });
  });
  app.delete(`${base}/documents/:docsId`, { schema: route(doc, documentsWire.deleteDocument) }, async (req) => {
    const { knowledgeId, key } = target(req.params);
    const { docsId } = req.params;
    return ok({ knowledgeId, docsId, deleted: await d.ingester.deleteDocument(key, docsId) });
  });
};

/** PUT: creates the knowledge base's collection (or checks its settings) and answers what it holds. */
async function ensureKnowledgeBase(
  d: DocumentRoutesDeps,
  ref: KnowledgeBaseRef,
  settings: z.infer<typeof knowledgeBaseSettingsSchema>,
) {
  const { namespace, knowledgeId, key } = target(ref);
  await d.ingester.adoptLegacy(namespace, knowledgeId);
  await d.ingester.ensure(key, settings);
  const sets = await d.store.vectorSets(key);
  if (!sets) throw new SearchError("SEARCH_ERR_STORE", { detail: `collection of ${key} not created` });
  const info = sets.serving;
  const stats = (await d.store.stats(key)) ?? { documents: 0, chunks: 0 };
  return ok({
    knowledgeId,
    model: info.model,
    dimensions: info.dimensions,
    chunking: info.chunking,
    ...stats,
    ...whereStored(d.store, info),
    ...(await building(d.store, sets.building)),
  });
}

/** GET: what the knowledge base holds, its uploads apart, and the vector set being built if any. */
async function describeKnowledgeBase(d: DocumentRoutesDeps, ref: KnowledgeBaseRef) {
  const { namespace, knowledgeId, key } = target(ref);
  await d.ingester.adoptLegacy(namespace, knowledgeId);
  const sets = await d.store.vectorSets(key);
  const stats = sets && (await d.store.stats(key));
  if (!sets || !stats) throw new SearchError("SEARCH_ERR_NOT_FOUND", { detail: `no collection for ${knowledgeId}` });
  const { model, dimensions } = sets.serving;
  // The serving vector set's model and collection come from this one read, so the KnowledgeBase
  // status taken from it never names one vector set's model beside another's collection.
  // The documents uploaded through the public API, counted apart (when there are any): the
  // operator keeps them out of what its sources produce (status.uploaded).
  const docs = await d.store.documents(key, UPLOAD_PREFIX);
  const uploaded = { documents: docs.length, chunks: docs.reduce((n, doc) => n + doc.chunks, 0) };
  return ok({
    knowledgeId,
    model,
    dimensions,
    ...stats,
    ...whereStored(d.store, sets.serving),
    ...(docs.length > 0 ? { uploaded } : {}),
    ...(await building(d.store, sets.building)),
  });
}

/**
 * Makes the vector set being built serve (after its last document); with {model}, only if it is
 * that model's. Asked again after it happened (a lost answer), it answers switched: false.
 */
async function switchVectorSet(d: DocumentRoutesDeps, ref: KnowledgeBaseRef, model: string | undefined) {
  const { knowledgeId, key } = target(ref);
  const switched = await d.ingester.switchVectorSet(key, model);
  const serving = switched ?? (await d.store.getCollection(key));
  if (!serving || (!switched && model !== undefined && serving.model !== model)) {
    throw new SearchError("SEARCH_ERR_NOT_FOUND", {
      detail: `no vector set ${model ? `of model ${model} ` : ""}being built for ${knowledgeId}`,
    });
  }
  return ok({ knowledgeId, model: serving.model, dimensions: serving.dimensions, switched: switched !== undefined });
}

/** The documents of the vector set written to (of one source, with ?source=), a page at a time. */
async function listDocuments(d: DocumentRoutesDeps, ref: KnowledgeBaseRef, q: z.infer<typeof documentListQuerySchema>) {
  const { knowledgeId, key } = target(ref);
  const page = await d.store.ingestedPage(key, q.source, q.from, q.limit);
  const documents = page.documents.map((doc) => ({
    docsId: doc.docsId,
    docsName: doc.docsName,
    chunks: doc.chunks,
    ...stampsOf(doc),
  }));
  return ok({ knowledgeId, documents, ...(page.next !== undefined ? { next: page.next } : {}) });
}

/** Where a vector set's vectors live and how they are indexed (the KnowledgeBase shows this in its status). */
function whereStored(store: VectorStore, info: CollectionInfo) {
  const l = store.layout(info);
  return {
    collection: l.backend === "qdrant" ? `${l.collection}/${l.tenant}` : l.collection,
    vectors: { backend: l.backend, size: l.vectorSize, distance: l.distance, hnsw: l.hnsw },
  };
}

/** The vector set being built, with its counts so far: the KnowledgeBase status shows its progress. */
async function building(store: VectorStore, info: CollectionInfo | undefined) {
  if (!info) return {};
  const stats = (await store.stats(info.knowledgeId, "building")) ?? { documents: 0, chunks: 0 };
  return { building: { model: info.model, dimensions: info.dimensions, ...stats } };
}
