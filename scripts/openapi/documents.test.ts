// The checked-in OpenAPI documents (docs/openapi/) are what the services serve, and the checked-in
// client types are what openapi-typescript makes of them: a route schema changed without
// `npm run openapi` fails here. The internal ports' documents are kept apart from the published
// ones: no internal route leaks into a public document, and every internal route is documented
// with its answers.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  CLIENT_TYPE_FILES,
  clientTypes,
  DOCUMENT_FILES,
  INTERNAL_DOCUMENT_FILES,
  type InternalService,
  openApiDocuments,
  type Service,
  type TypedService,
} from "./documents.ts";

interface Operation {
  parameters?: unknown[];
  requestBody?: unknown;
  responses?: Record<string, unknown>;
}
type Paths = Record<string, Record<string, Operation>>;

/** "GET /path" of each operation that documents no successful (2xx) answer. */
function withoutAnswers(paths: Paths): string[] {
  return Object.entries(paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([, op]) => !Object.keys(op.responses ?? {}).some((status) => status.startsWith("2")))
      .map(([method]) => `${method.toUpperCase()} ${path}`),
  );
}

describe("published OpenAPI documents", async () => {
  const all = await openApiDocuments();
  const docs = all.public;
  for (const [service, file] of Object.entries(DOCUMENT_FILES) as [Service, string][]) {
    it(`${file} matches what ${service} serves (else run npm run openapi)`, () => {
      expect(readFileSync(file, "utf8")).toBe(docs[service]);
      const doc = JSON.parse(docs[service]);
      expect(doc.openapi).toBe("3.1.0");
      expect(Object.keys(doc.paths).length).toBeGreaterThan(0);
      // The internal port's routes are documented apart, never in the published contract.
      expect(Object.keys(doc.paths).filter((p) => p.startsWith("/internal"))).toEqual([]);
    });
  }
  const types = await clientTypes(docs);
  for (const [service, file] of Object.entries(CLIENT_TYPE_FILES) as [TypedService, string][]) {
    it(`${file} is what openapi-typescript generates from ${service}'s document (else run npm run openapi)`, () => {
      expect(readFileSync(file, "utf8")).toBe(types[service]);
      expect(types[service]).toContain("export interface paths");
    });
  }
});

/** "GET /path" of each operation that declares no schema at all (no parameter, body or answer body). */
function withoutSchemas(paths: Paths): string[] {
  return Object.entries(paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([, op]) => !op.parameters?.length && !op.requestBody)
      .filter(([, op]) => !Object.values(op.responses ?? {}).some((r) => (r as { content?: unknown }).content))
      .map(([method]) => `${method.toUpperCase()} ${path}`),
  );
}

/**
 * The internal routes known to declare no schema (to be given one); a new one fails the test
 * below, which prints them all.
 */
const KNOWN_WITHOUT_SCHEMAS = ["console: GET /"];

describe("internal ports' OpenAPI documents", async () => {
  const { internal } = await openApiDocuments();
  it("lists the internal routes without schemas (printed below)", () => {
    const found = (Object.entries(internal) as [InternalService, string][]).flatMap(([service, text]) =>
      withoutSchemas((JSON.parse(text) as { paths: Paths }).paths).map((op) => `${service}: ${op}`),
    );
    console.warn(`internal routes without schemas:\n${found.join("\n") || "(none)"}`);
    expect(found).toEqual(KNOWN_WITHOUT_SCHEMAS);
  });
  const expected: Record<InternalService, string[]> = {
    gateway: ["/internal/v1/usage", "/internal/v1/budget", "/internal/v1/upstreams"],
    search: [
      "/internal/v1/namespaces/{namespace}/knowledge-bases/{knowledgeId}",
      "/internal/v1/namespaces/{namespace}/knowledge-bases/{knowledgeId}/documents/{docsId}",
      "/v1/rag/search",
    ],
    "scraper-render": ["/scrape"],
    console: ["/api/session", "/api/namespaces/{ns}/accesschannels", "/api/namespaces/{ns}/usage"],
  };
  for (const [service, file] of Object.entries(INTERNAL_DOCUMENT_FILES) as [InternalService, string][]) {
    it(`${file} matches what ${service}'s internal port serves, every route with its answers`, () => {
      expect(readFileSync(file, "utf8")).toBe(internal[service]);
      const doc = JSON.parse(internal[service]) as { openapi: string; paths: Paths };
      expect(doc.openapi).toBe("3.1.0");
      expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(expected[service]));
      expect(withoutAnswers(doc.paths), "routes documented without a successful answer").toEqual([]);
    });
  }
});
