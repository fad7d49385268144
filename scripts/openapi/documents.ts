// The OpenAPI documents each service serves at /openapi.json, built from the services' own apps
// (their route schemas) with inert dependencies: no server listens, no model loads, no Redis.
// `npm run openapi` writes them to docs/openapi/; documents.test.ts fails when those drift.
import { buildApp as buildGateway } from "@capstan/gateway";
import { buildApp as buildScraper, type RenderClient, scraperConfig } from "@capstan/scraper";
import { buildApp as buildSearch } from "@capstan/search";
import { createLogger, openApiDocument } from "@capstan/shared";
import { ResourceView } from "@capstan/shared/resource-view";
import type { FastifyInstance } from "fastify";

/** The checked-in copies, by service. */
export const DOCUMENT_FILES = {
  gateway: "docs/openapi/gateway.json",
  search: "docs/openapi/search.json",
  scraper: "docs/openapi/scraper.json",
} as const;

export type Service = keyof typeof DOCUMENT_FILES;

const logger = () => createLogger({ name: "openapi", level: "silent" });

function view(...kinds: ("AccessChannel" | "Agent" | "SearchKey" | "KnowledgeBase")[]): ResourceView {
  const v = new ResourceView();
  for (const kind of kinds) v.replace(kind, []);
  return v;
}

async function documentOf(app: FastifyInstance): Promise<string> {
  try {
    return await openApiDocument(app);
  } finally {
    await app.close();
  }
}

/** Every service's document, as the checked-in files hold it. */
export async function openApiDocuments(): Promise<Record<Service, string>> {
  const gateway = await documentOf(buildGateway({}, { view: view("AccessChannel", "Agent"), logger: logger() }));
  // No embedder: the document does not depend on the model, and none is loaded.
  const search = await documentOf(
    await buildSearch({}, { view: view("SearchKey", "KnowledgeBase"), embedders: [], logger: logger() }),
  );
  // No renderer: nothing is rendered, and the readiness probe must not dial one.
  const renderClient: RenderClient = {
    render: () => Promise.reject(new Error("no renderer while documenting")),
    probe: async () => false,
    close: async () => {},
  };
  const scraper = await documentOf(buildScraper(scraperConfig(), { renderClient, logger: logger() }));
  return { gateway, search, scraper };
}
