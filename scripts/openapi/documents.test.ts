// The checked-in OpenAPI documents (docs/openapi/) are what the services serve, and the checked-in
// client types are what openapi-typescript makes of them: a route schema changed without
// `npm run openapi` fails here.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  CLIENT_TYPE_FILES,
  clientTypes,
  DOCUMENT_FILES,
  openApiDocuments,
  type Service,
  type TypedService,
} from "./documents.ts";

describe("published OpenAPI documents", async () => {
  const docs = await openApiDocuments();
  for (const [service, file] of Object.entries(DOCUMENT_FILES) as [Service, string][]) {
    it(`${file} matches what ${service} serves (else run npm run openapi)`, () => {
      expect(readFileSync(file, "utf8")).toBe(docs[service]);
      const doc = JSON.parse(docs[service]);
      expect(doc.openapi).toBe("3.1.0");
      expect(Object.keys(doc.paths).length).toBeGreaterThan(0);
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
