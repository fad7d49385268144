// The internal documents API used by ingestion (the operator, the standalone launcher), guarded
// by the internal token. Responses use the same envelope as search. A model change builds a new
// generation beside the serving one (PUT answers with both); POST .../switch makes it serve.
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { SearchKeyAuthenticator } from "../auth/search-keys.ts";
import type { SearchConfig } from "../config.ts";
import { ok, SearchError } from "../errors.ts";
import type { Ingester } from "../ingest.ts";
import { docsIdSchema, documentBodySchema, knowledgeIdParam, parseBody } from "../schemas.ts";
import type { CollectionInfo, VectorStore } from "../store/types.ts";

export interface DocumentRoutesDeps {
  config: SearchConfig;
  auth: SearchKeyAuthenticator;
  ingester: Ingester;
  store: VectorStore;
}

interface Params {
  knowledgeId: string;
  docsId?: string;
}

function params(req: FastifyRequest): { knowledgeId: string; docsId: string } {
  const p = req.params as Params;
  const kb = knowledgeIdParam.safeParse(p.knowledgeId);
  if (!kb.success)
    throw new SearchError("SEARCH_ERR_BODY_INVALID", { detail: `knowledgeId: ${kb.error.issues[0]?.message}` });
  if (p.docsId === undefined) return { knowledgeId: kb.data, docsId: "" };
  const doc = docsIdSchema.safeParse(p.docsId);
  if (!doc.success)
    throw new SearchError("SEARCH_ERR_BODY_INVALID", { detail: `docsId: ${doc.error.issues[0]?.message}` });
  return { knowledgeId: kb.data, docsId: doc.data };
}

export function registerDocumentRoutes(app: FastifyInstance, d: DocumentRoutesDeps): void {
  const base = "/internal/v1/knowledge-bases/:knowledgeId";
  const guard = async (req: FastifyRequest) => d.auth.authenticateInternal(req.headers.authorization);

  app.put(base, { preHandler: guard }, async (req) => {
    const { knowledgeId } = params(req);
    const body = req.body ?? {};
    if (typeof body !== "object" || Array.isArray(body)) {
      throw new SearchError("SEARCH_ERR_BODY_INVALID", { detail: "body: must be a JSON object" });
    }
    await d.ingester.ensure(knowledgeId, body as Record<string, unknown>);
    const gens = await d.store.generations(knowledgeId);
    if (!gens) throw new SearchError("SEARCH_ERR_STORE", { detail: `collection of ${knowledgeId} not created` });
    const info = gens.serving;
    const stats = (await d.store.stats(knowledgeId)) ?? { documents: 0, chunks: 0 };
    const l = d.store.layout(info);
    return ok({
      knowledgeId,
      model: info.model,
      dimensions: info.dimensions,
      chunking: info.chunking,
      ...stats,
      // Where the vectors live and how they are indexed (the KnowledgeBase shows this in its status).
      collection: l.backend === "qdrant" ? `${l.collection}/${l.tenant}` : l.collection,
      vectors: { backend: l.backend, size: l.vectorSize, distance: l.distance, hnsw: l.hnsw },
      ...(await building(d.store, gens.building)),
    });
  });

  app.get(base, { preHandler: guard }, async (req) => {
    const { knowledgeId } = params(req);
    const gens = await d.store.generations(knowledgeId);
    const stats = gens && (await d.store.stats(knowledgeId));
    if (!gens || !stats) throw new SearchError("SEARCH_ERR_NOT_FOUND", { detail: `no collection for ${knowledgeId}` });
    const { model, dimensions } = gens.serving;
    return ok({ knowledgeId, model, dimensions, ...stats, ...(await building(d.store, gens.building)) });
  });

  // Makes the generation being built serve (after its last document); with {model}, only if it is
  // that model's. Asked again after it happened (a lost answer), it answers switched: false.
  app.post(`${base}/switch`, { preHandler: guard }, async (req) => {
    const { knowledgeId } = params(req);
    const body = (req.body ?? {}) as { model?: unknown };
    if (
      typeof body !== "object" ||
      Array.isArray(body) ||
      (body.model !== undefined && typeof body.model !== "string")
    ) {
      throw new SearchError("SEARCH_ERR_BODY_INVALID", { detail: "body: {model?: string}" });
    }
    const model = body.model as string | undefined;
    const switched = await d.ingester.switchGeneration(knowledgeId, model);
    const serving = switched ?? (await d.store.getCollection(knowledgeId));
    if (!serving || (!switched && model !== undefined && serving.model !== model)) {
      throw new SearchError("SEARCH_ERR_NOT_FOUND", {
        detail: `no generation ${model ? `of model ${model} ` : ""}being built for ${knowledgeId}`,
      });
    }
    return ok({ knowledgeId, model: serving.model, dimensions: serving.dimensions, switched: switched !== undefined });
  });

  app.delete(base, { preHandler: guard }, async (req) => {
    const { knowledgeId } = params(req);
    const deleted = await d.ingester.drop(knowledgeId);
    return ok({ knowledgeId, deleted });
  });

  app.put(
    `${base}/documents/:docsId`,
    { preHandler: guard, bodyLimit: d.config.documents.maxBodyBytes },
    async (req) => {
      const { knowledgeId, docsId } = params(req);
      const body = parseBody(documentBodySchema, req.body);
      const chunks = await d.ingester.upsert(knowledgeId, docsId, body);
      return ok({ knowledgeId, docsId, chunks });
    },
  );

  app.delete(`${base}/documents/:docsId`, { preHandler: guard }, async (req) => {
    const { knowledgeId, docsId } = params(req);
    const deleted = await d.store.deleteDocument(knowledgeId, docsId);
    return ok({ knowledgeId, docsId, deleted });
  });
}

/** The generation being built, with its counts so far: the KnowledgeBase status shows its progress. */
async function building(store: VectorStore, info: CollectionInfo | undefined) {
  if (!info) return {};
  const stats = (await store.stats(info.knowledgeId, "building")) ?? { documents: 0, chunks: 0 };
  return { building: { model: info.model, dimensions: info.dimensions, ...stats } };
}
