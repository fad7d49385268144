// npm run openapi: writes each service's OpenAPI document, and the client types generated from
// search's and the scraper's, to docs/openapi/ (run it after changing a route's schema;
// documents.test.ts fails until the checked-in copies match).
import { writeFileSync } from "node:fs";
import {
  CLIENT_TYPE_FILES,
  clientTypes,
  DOCUMENT_FILES,
  openApiDocuments,
  type Service,
  type TypedService,
} from "./documents.ts";

const docs = await openApiDocuments();
for (const [service, text] of Object.entries(docs) as [Service, string][]) {
  writeFileSync(DOCUMENT_FILES[service], text);
  console.log(`wrote ${DOCUMENT_FILES[service]}`);
}
for (const [service, text] of Object.entries(await clientTypes(docs)) as [TypedService, string][]) {
  writeFileSync(CLIENT_TYPE_FILES[service], text);
  console.log(`wrote ${CLIENT_TYPE_FILES[service]}`);
}
