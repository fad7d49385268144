// Document upload to a knowledge base: the page sends the file itself (Markdown, plain text, HTML
// or PDF, its Content-Type saying which, the name in `?fileName=`); the console turns it into
// Markdown with @capstan/shared/documents (the converter search's documents API uses, so a file
// reads the same whichever way it came) and keeps it as a ConfigMap source of the knowledge base
// that the operator ingests like any other (standalone mode: an inline text source in the YAML).
// Why not search's documents API: docs/console.md.
import { DOCUMENT_TYPES, DocumentError, formatOf, toMarkdown } from "@capstan/shared/documents";
import { isStatus } from "@capstan/shared/kube";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { z } from "zod";
import { type ConsoleContext, checkName, sessionOf } from "../context.ts";
import { errors } from "../errors.ts";
import type { ConsoleApi } from "../user-api.ts";
import { knowledgeRowSchema, nsNameParams, uploadQuery } from "../wire.ts";
import { knowledgeRow, PLURAL } from "./knowledge.ts";

/** A ConfigMap holds at most 1 MiB; leave room for its metadata. This bounds the Markdown kept. */
export const MAX_UPLOAD_BYTES = 900 * 1024;
/** The file as uploaded (a PDF is much larger than its text); the page checks it before sending. */
export const MAX_FILE_BYTES = 8 * 1024 * 1024;
/** Pages of a PDF converted at most: the conversion runs on the console's event loop. */
const MAX_PDF_PAGES = 500;

/**
 * The document's text as the knowledge base stores it: Markdown and text as they are (UTF-8),
 * HTML and PDF as Markdown. A file that cannot be converted (not UTF-8, not a PDF, damaged,
 * password-protected, too many pages) or that has no text is refused in words (422).
 */
export async function documentText(fileName: string, contentType: string | undefined, body: Buffer): Promise<string> {
  const format = formatOf(contentType);
  if (!format) throw errors.documentType(Object.keys(DOCUMENT_TYPES));
  let markdown: string;
  try {
    ({ markdown } = await toMarkdown(format, body, { maxPages: MAX_PDF_PAGES }));
  } catch (err) {
    if (err instanceof DocumentError) throw errors.invalid(`${fileName} cannot be read: ${err.message}`);
    throw err;
  }
  if (!markdown.trim()) {
    throw errors.invalid(
      format === "pdf"
        ? `${fileName} has no text to ingest (a scanned PDF holds only images, and there is no OCR here)`
        : `${fileName} has no text to ingest`,
    );
  }
  if (Buffer.byteLength(markdown) > MAX_UPLOAD_BYTES) {
    throw errors.invalid(
      `${fileName} holds more than ${MAX_UPLOAD_BYTES / 1024} KiB of text: split it or serve it from a URL source`,
    );
  }
  return markdown;
}

/** An upload as the route has validated it: the path, `?fileName=`, and the file's bytes. */
interface UploadRequest {
  params: z.infer<typeof nsNameParams>;
  query: z.infer<typeof uploadQuery>;
  headers: { "content-type"?: string | undefined };
  body: unknown;
}

async function upload(api: ConsoleApi, req: UploadRequest) {
  const ns = checkName("namespace", req.params.ns);
  const { fileName } = req.query;
  if (!Buffer.isBuffer(req.body)) throw errors.documentType(Object.keys(DOCUMENT_TYPES));
  if (req.body.length === 0) throw errors.invalid(`${fileName} is empty`);
  const text = await documentText(fileName, req.headers["content-type"], req.body);

  const kb = await api.get(PLURAL, ns, req.params.name);
  const stem =
    fileName
      .toLowerCase()
      .replace(/\.[a-z0-9]+$/, "")
      .replace(/[^a-z0-9-]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 40) || "document";
  const cmName = `${req.params.name}-doc-${stem}`.slice(0, 63).replace(/-+$/, "");
  const key = fileName.replace(/[^A-Za-z0-9._-]+/g, "_");
  const cm = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: cmName, namespace: ns, labels: { "capstan.dev/knowledge-base": req.params.name } },
    data: { [key]: text },
  };
  const sources = ((kb.spec?.sources as Record<string, unknown>[] | undefined) ?? []).filter(
    (s) => (s.configMap as { name?: string } | undefined)?.name !== cmName && s.name !== fileName,
  );
  if (api.inlineDocuments) {
    // Standalone mode: the document goes into the YAML as an inline text source.
    sources.push({ name: fileName, text });
  } else {
    try {
      await api.createConfigMap(ns, cm);
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
      await api.replaceConfigMap(ns, cmName, cm);
    }
    sources.push({ name: fileName, configMap: { name: cmName, keys: [key] } });
  }
  // resourceVersion: a concurrent edit of the sources makes this fail (409) instead of losing it.
  return api.patch(PLURAL, ns, req.params.name, {
    metadata: { resourceVersion: kb.metadata.resourceVersion },
    spec: { sources },
  });
}

/**
 * POST /api/namespaces/:ns/knowledgebases/:name/documents?fileName=…, the file as the body. Its
 * body parsers are this plugin's own, so the rest of the API keeps taking JSON only; the session
 * and CSRF token are checked before the body is read, so a refused upload costs no buffering.
 */
export function documentRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  app.register(async (scope) => {
    scope.removeContentTypeParser("text/plain");
    scope.addContentTypeParser(Object.keys(DOCUMENT_TYPES), { parseAs: "buffer" }, (_req, body, done) =>
      done(null, body),
    );
    scope.withTypeProvider<ZodTypeProvider>().post(
      "/api/namespaces/:ns/knowledgebases/:name/documents",
      {
        bodyLimit: MAX_FILE_BYTES,
        // The body is the file itself: only the path and the query have schemas.
        schema: { params: nsNameParams, querystring: uploadQuery, response: { 201: knowledgeRowSchema } },
        onRequest: async (req) => {
          await sessionOf(ctx, req);
        },
      },
      async (req, reply) => {
        const { api } = await sessionOf(ctx, req);
        const updated = await upload(api, req);
        reply.code(201);
        return knowledgeRow(updated);
      },
    );
  });
}
