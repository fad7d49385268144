// npm run openapi: writes each service's OpenAPI document, and the client types generated from
// search's and the scraper's, to docs/openapi/ (run it after changing a route's schema;
// documents.test.ts fails until the checked-in copies match).
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
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

const all = await openApiDocuments();
const docs = all.public;
const files: [string, string][] = [
  ...(Object.entries(docs) as [Service, string][]).map(([s, text]): [string, string] => [DOCUMENT_FILES[s], text]),
  ...(Object.entries(all.internal) as [InternalService, string][]).map(([s, text]): [string, string] => [
    INTERNAL_DOCUMENT_FILES[s],
    text,
  ]),
];
for (const [file, text] of files) {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  console.log(`wrote ${file}`);
}
for (const [service, text] of Object.entries(await clientTypes(docs)) as [TypedService, string][]) {
  writeFileSync(CLIENT_TYPE_FILES[service], text);
  console.log(`wrote ${CLIENT_TYPE_FILES[service]}`);
}
