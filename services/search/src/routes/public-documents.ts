// The public documents API, registered at /v1/knowledge-bases: a SearchKey with the write
// permission uploads, replaces and deletes documents of the knowledge bases in its scope; a key
// with read lists them. The body is the document itself (Markdown, text, HTML or PDF, told by
// its Content-Type), converted to Markdown by @capstan/shared/documents and ingested like the
// operator's documents. An uploaded document's id is `upload:<name>`, so it never collides with
// the documents of the KnowledgeBase's sources (`doc_<hash>`), and a refresh, which deletes only
// documents of its own sources, leaves it alone.
//
// Who may call is decided in onRequest, before the body (up to documents.maxBodyBytes) is read:
// the key (401), its address (403), its requests per minute (429), the knowledge base in the
// key's scope and namespace (400, the same answer whether it exists elsewhere or not, as for
// search), then the permission (403).

import { knowledgeIdSchema } from "@capstan/shared/clients/documents-wire";
import { DocumentError, type DocumentFormat, formatOf, toMarkdown } from "@capstan/shared/documents";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { z } from "zod";
import type { Caller, Permission } from "../auth/search-keys.ts";
import { ok, SearchError } from "../errors.ts";
import type { Ingester } from "../ingest.ts";
import type { KnowledgeBases } from "../knowledge-bases.ts";
import { parseObject } from "../schemas.ts";
import type { VectorStore } from "../store/types.ts";
import { caller, type SearchRoutesOptions } from "./search.ts";
import { documentDeletedResponse, documentListResponse, documentResponse, errorResponses } from "./search-schemas.ts";

export interface PublicDocumentRoutesOptions
  extends Pick<SearchRoutesOptions, "auth" | "limiter" | "metrics" | "config"> {
  kbs: KnowledgeBases;
  ingester: Ingester;
  store: VectorStore;
}

/** Uploaded documents' ids: this prefix and the name. */
export const UPLOAD_PREFIX = "upload:";

const DOCUMENT_TYPES = [
  "text/markdown",
  "text/x-markdown",
  "text/plain",
  "text/html",
  "application/xhtml+xml",
  "application/pdf",
];

const params = z.object({
  knowledgeId: knowledgeIdSchema,
  name: z
    .string()
    .regex(
      // Control characters spelt as ranges (not \p{Cc}), so the published pattern reads the same in
      // every JSON Schema regex engine.
      // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
      /^[^\s/\\\u0000-\u001f\u007f][^/\\\u0000-\u001f\u007f]{0,255}$/,
      "must be 1-256 characters without slashes or controls",
    )
    .optional(),
});

declare module "fastify" {
  interface FastifyRequest {
    /** The store key of the knowledge base the documents API call addresses (set in onRequest). */
    documentsKey?: string;
  }
}

/** The knowledge base's store key when the caller may do `need` on it; else the error to answer. */
function authorise(kbs: KnowledgeBases, who: Caller, knowledgeId: string, need: Permission): string {
  // The internal caller has its own documents API on the internal port.
  if (who.kind !== "key") throw new SearchError("SEARCH_ERR_WRITE_FORBIDDEN", { knowledgeId });
  const key = who.knowledgeIds.has(knowledgeId) ? kbs.keyOf(who.namespace, knowledgeId) : undefined;
  if (!key) throw new SearchError("SEARCH_ERR_KNOWLEDGE_ID", { knowledgeId });
  // Listing needs the knowledge base in scope (any permission); writing needs write.
  if (need === "write" && !who.permissions.has("write")) {
    throw new SearchError("SEARCH_ERR_WRITE_FORBIDDEN", { knowledgeId });
  }
  return key;
}

/**
 * The path's knowledge id and document name, checked by the params schema the routes declare.
 * Checked here, in onRequest, because the key's scope is decided before the body is read (route
 * schemas are applied after it); a bad one is the same 400 naming the field as any route's.
 */
function pathOf(req: FastifyRequest): { knowledgeId: string; name: string } {
  const p = parseObject(params, req.params);
  return { knowledgeId: p.knowledgeId, name: p.name ?? "" };
}

export const publicDocumentRoutes: FastifyPluginAsync<PublicDocumentRoutesOptions> = async (app, options) => {
  const { prefix: _prefix, ...d } = options as PublicDocumentRoutesOptions & { prefix?: string };
  const bodyLimit = d.config.documents.maxBodyBytes;

  // The document types arrive as raw bytes; anything else is refused with this API's own 415.
  app.addContentTypeParser(DOCUMENT_TYPES, { parseAs: "buffer", bodyLimit }, (_req, body, done) => done(null, body));
  app.addContentTypeParser("*", (req, _payload, done) =>
    done(new SearchError("SEARCH_ERR_DOCUMENT_TYPE", { got: String(req.headers["content-type"] ?? "").slice(0, 100) })),
  );

  app.addHook("onRequest", async (req, reply) => {
    try {
      const who = await caller({ ...d, callers: "keys" }, req);
      const { knowledgeId } = pathOf(req);
      req.documentsKey = authorise(d.kbs, who, knowledgeId, req.method === "GET" ? "read" : "write");
    } catch (err) {
      // A refused upload's body is not read: the connection closes after the answer.
      if (req.method === "PUT") reply.header("connection", "close");
      throw err;
    }
  });

  app.get("/:knowledgeId/documents", { schema: listSchema }, (req) => listUploads(d, req));
  app.put(
    "/:knowledgeId/documents/:name",
    {
      bodyLimit,
      schema: putSchema,
      // The body is the raw document: its checks are the conversion's.
      validatorCompiler: () => (value: unknown) => ({ value }),
    },
    (req) => putUpload(d, req),
  );
  app.delete("/:knowledgeId/documents/:name", { schema: deleteSchema }, (req) => deleteUpload(d, req));
};

const security = [{ searchKey: [] }];

const listSchema = {
  operationId: "listDocuments",
  summary: "The documents uploaded to a knowledge base, with their chunk counts, and the knowledge base's totals",
  tags: ["documents"],
  security,
  params: params.omit({ name: true }),
  response: { 200: documentListResponse, ...errorResponses(400, 401, 403, 429, 500, 503) },
};

/** The uploaded documents (their names, chunks, formats) and the knowledge base's totals. */
async function listUploads(d: PublicDocumentRoutesOptions, req: FastifyRequest) {
  const key = req.documentsKey as string;
  const { knowledgeId } = pathOf(req);
  const docs = await d.store.documents(key, UPLOAD_PREFIX);
  const total = (await d.store.stats(key)) ?? { documents: 0, chunks: 0 };
  return ok({
    knowledgeId,
    documents: docs.map((doc) => ({
      name: doc.docsId.slice(UPLOAD_PREFIX.length),
      chunks: doc.chunks,
      format: doc.extra?.format ?? "markdown",
      ...(doc.extra?.title ? { title: doc.extra.title } : {}),
      ...(doc.extra?.uploadedAt ? { uploadedAt: doc.extra.uploadedAt } : {}),
    })),
    uploaded: { documents: docs.length, chunks: docs.reduce((n, doc) => n + doc.chunks, 0) },
    total,
  });
}

const putSchema = {
  operationId: "putDocument",
  summary: "Upload or replace a document (by name): the body is the document, in the format its Content-Type names",
  tags: ["documents"],
  security,
  consumes: DOCUMENT_TYPES,
  params,
  body: z.string().meta({ format: "binary", description: "the document's bytes (text formats in UTF-8)" }),
  response: { 200: documentResponse, ...errorResponses(400, 401, 403, 413, 415, 429, 500, 503) },
};

/** Converts the uploaded document to Markdown and ingests it under `upload:<name>`. */
async function putUpload(d: PublicDocumentRoutesOptions, req: FastifyRequest) {
  const key = req.documentsKey as string;
  const { knowledgeId, name } = pathOf(req);
  const format = formatOf(req.headers["content-type"]);
  if (!format || !Buffer.isBuffer(req.body)) {
    throw new SearchError("SEARCH_ERR_DOCUMENT_TYPE", {
      got: String(req.headers["content-type"] ?? "").slice(0, 100),
    });
  }
  const doc = await convert(format, req.body);
  const { chunks } = await d.ingester.upsert(key, UPLOAD_PREFIX + name, {
    docsName: name,
    text: doc.markdown,
    metadata: {
      source: "upload",
      format,
      uploadedAt: new Date().toISOString(),
      ...(doc.title ? { title: doc.title.slice(0, 512) } : {}),
    },
  });
  return ok({ knowledgeId, name, format, chunks, ...(doc.title ? { title: doc.title } : {}) });
}

const deleteSchema = {
  operationId: "deleteDocument",
  summary: "Delete an uploaded document",
  tags: ["documents"],
  security,
  params,
  response: {
    200: documentDeletedResponse,
    ...errorResponses(400, 401, 403, 413, 415, 429, 500, 503),
  },
};

/** Deletes an uploaded document and its chunks. */
async function deleteUpload(d: PublicDocumentRoutesOptions, req: FastifyRequest) {
  const key = req.documentsKey as string;
  const { knowledgeId, name } = pathOf(req);
  const deleted = await d.ingester.deleteDocument(key, UPLOAD_PREFIX + name);
  return ok({ knowledgeId, name, deleted });
}

async function convert(format: DocumentFormat, body: Buffer) {
  try {
    const doc = await toMarkdown(format, body);
    if (doc.markdown.trim() === "") {
      throw new DocumentError(
        "invalid",
        `the ${format} document has no text${format === "pdf" ? " (a scanned PDF?)" : ""}`,
      );
    }
    return doc;
  } catch (err) {
    if (err instanceof DocumentError) throw new SearchError("SEARCH_ERR_DOCUMENT_INVALID", { detail: err.message });
    throw err;
  }
}
