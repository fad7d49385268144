// Knowledge bases: the list with ingestion counts and failed sources, create (the CRD's zod
// schema), one knowledge base with its sources (document upload is in documents.ts), and "try a
// search" through the real search API with a search key of the user's (read with their token: no
// key of the console's own).
import { API_VERSION, KINDS, knowledgeBaseSpec } from "@capstan/shared/api";
import { SearchApiError, SearchClient } from "@capstan/shared/clients/search-client";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { type ConsoleContext, checkName, sessionOf } from "../context.ts";
import { ConsoleError, errors } from "../errors.ts";
import { readyOf } from "../ready.ts";
import type { ConsoleApi, KubeObject } from "../user-api.ts";
import {
  createBody,
  itemsOf,
  type KnowledgeRow,
  knowledgeRowSchema,
  nsNameParams,
  nsParams,
  searchHitsSchema,
  trySearchBody,
} from "../wire.ts";

export const PLURAL = KINDS.KnowledgeBase.plural;

const knowledgeIdOf = (o: KubeObject) =>
  (o.spec?.knowledgeId as string | undefined) ?? `kb_${o.metadata.name.replaceAll("-", "_")}`;

type Source = KnowledgeRow["sources"][number];

export function knowledgeRow(o: KubeObject): KnowledgeRow {
  const spec = (o.spec ?? {}) as { sources?: Record<string, unknown>[]; description?: string };
  const status = (o.status ?? {}) as Record<string, unknown>;
  return {
    name: o.metadata.name,
    knowledgeId: knowledgeIdOf(o),
    description: spec.description ?? "",
    sources: (spec.sources ?? []).map((s) => ({
      name: s.name as string,
      kind: (s.url ? "url" : s.crawl ? "crawl" : s.configMap ? "configMap" : "text") as Source["kind"],
      detail:
        (s.url as string | undefined) ??
        (s.crawl as { url?: string } | undefined)?.url ??
        (s.configMap as { name?: string } | undefined)?.name ??
        "inline text",
    })),
    documents: (status.documents as number | undefined) ?? 0,
    chunks: (status.chunks as number | undefined) ?? 0,
    failures: (status.failures as number | undefined) ?? 0,
    failedSources: (status.failedSources as string[] | undefined) ?? [],
    uploaded: (status.uploaded as { documents?: number } | undefined)?.documents ?? 0,
    progress: (status.progress as string | undefined) ?? "",
    /** Documents uploaded through search's documents API (filled from search on the single view). */
    uploadedDocuments: [],
    ready: readyOf(o),
  };
}

/** A Ready search key of the namespace whose scope holds `knowledgeId`, and its key (read with the user's token). */
async function searchKeyFor(api: ConsoleApi, ns: string, knowledgeId: string): Promise<string> {
  const keys = await api.list("searchkeys", ns);
  const usable = keys.items.find(
    (k) =>
      ((k.spec?.knowledgeIds as string[] | undefined) ?? []).includes(knowledgeId) &&
      readyOf(k).status === "True" &&
      !(k.spec?.allowedCIDRs as string[] | undefined)?.length,
  );
  if (!usable) {
    throw new ConsoleError(
      409,
      "NoSearchKey",
      `no Ready search key without an IP restriction covers ${knowledgeId} in ${ns}: create one on the Search keys page`,
    );
  }
  const secretName = (usable.status?.secretName as string | undefined) ?? `${usable.metadata.name}-search-key`;
  const secret = await api.getSecret(ns, secretName);
  return Buffer.from(secret.data?.key ?? "", "base64")
    .toString("utf8")
    .trim();
}

/**
 * The counts search has now, uploads included, with the uploaded documents: the status is written
 * by the operator at each refresh and between them every minute, and standalone mode writes none.
 * Nothing (the status stands) when no usable search key covers the knowledge base or search fails.
 */
async function liveCounts(ctx: ConsoleContext, api: ConsoleApi, ns: string, knowledgeId: string) {
  if (!ctx.config.searchUrl) return {};
  try {
    const token = await searchKeyFor(api, ns, knowledgeId);
    const client = new SearchClient({ baseURL: ctx.config.searchUrl, token, timeoutMs: 5_000, maxRetries: 1 });
    const list = await client.listDocuments(knowledgeId);
    return {
      documents: list.total.documents,
      chunks: list.total.chunks,
      uploaded: list.uploaded.documents,
      uploadedDocuments: list.documents.map((d) => ({ name: d.name, chunks: d.chunks, format: d.format })),
    };
  } catch {
    return {};
  }
}

const one = { params: nsNameParams, response: { 200: knowledgeRowSchema } };

export function knowledgeRoutes(plain: FastifyInstance, ctx: ConsoleContext): void {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  const create = { params: nsParams, body: createBody, response: { 201: knowledgeRowSchema } };
  app.post("/api/namespaces/:ns/knowledgebases", { schema: create }, async (req, reply) => {
    const { api } = await sessionOf(ctx, req);
    const ns = checkName("namespace", req.params.ns);
    const spec = knowledgeBaseSpec.safeParse(req.body.spec);
    if (!spec.success) {
      throw errors.invalid(spec.error.issues.map((i) => `${i.path.join(".") || "spec"}: ${i.message}`).join("; "));
    }
    const created = await api.create(PLURAL, ns, {
      apiVersion: API_VERSION,
      kind: "KnowledgeBase",
      metadata: { name: checkName("knowledge base name", req.body.name), namespace: ns },
      // What the user gave, not the defaults zod filled in: the API server applies the CRD's own.
      spec: req.body.spec,
    });
    reply.code(201);
    return knowledgeRow(created);
  });

  const list = { params: nsParams, response: { 200: itemsOf(knowledgeRowSchema) } };
  app.get("/api/namespaces/:ns/knowledgebases", { schema: list }, async (req) => {
    const { api } = await sessionOf(ctx, req);
    const list = await api.list(PLURAL, checkName("namespace", req.params.ns));
    return { items: list.items.map(knowledgeRow) };
  });

  app.get("/api/namespaces/:ns/knowledgebases/:name", { schema: one }, async (req) => {
    const { api } = await sessionOf(ctx, req);
    const ns = checkName("namespace", req.params.ns);
    const row = knowledgeRow(await api.get(PLURAL, ns, req.params.name));
    return { ...row, ...(await liveCounts(ctx, api, ns, row.knowledgeId)) };
  });

  const search = { params: nsNameParams, body: trySearchBody, response: { 200: searchHitsSchema } };
  app.post("/api/namespaces/:ns/knowledgebases/:name/search", { schema: search }, async (req) => {
    const { api } = await sessionOf(ctx, req);
    const ns = checkName("namespace", req.params.ns);
    if (!ctx.config.searchUrl) throw errors.notConfigured("the search service's URL (CAPSTAN_SEARCH_URL)");
    const knowledgeId = knowledgeIdOf(await api.get(PLURAL, ns, req.params.name));
    const token = await searchKeyFor(api, ns, knowledgeId);
    const client = new SearchClient({ baseURL: ctx.config.searchUrl, token, timeoutMs: 15_000, maxRetries: 1 });
    try {
      return { results: await client.search({ knowledgeIds: [knowledgeId], ...req.body }) };
    } catch (err) {
      if (err instanceof SearchApiError) throw errors.upstream("the search service", err.message);
      throw err;
    }
  });
}
