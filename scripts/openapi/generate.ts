// npm run openapi: writes each service's OpenAPI document to docs/openapi/ (run it after changing a
// route's schema; documents.test.ts fails until the checked-in copies match).
import { writeFileSync } from "node:fs";
import { DOCUMENT_FILES, openApiDocuments, type Service } from "./documents.ts";

const docs = await openApiDocuments();
for (const [service, text] of Object.entries(docs) as [Service, string][]) {
  writeFileSync(DOCUMENT_FILES[service], text);
  console.log(`wrote ${DOCUMENT_FILES[service]}`);
}
