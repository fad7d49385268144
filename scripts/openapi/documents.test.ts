// The checked-in OpenAPI documents (docs/openapi/) are what the services serve: a route schema
// changed without `npm run openapi` fails here.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DOCUMENT_FILES, openApiDocuments, type Service } from "./documents.ts";

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
});
