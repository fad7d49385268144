// Setup file of the integration project: fails a test file that leaves Qdrant collections behind
// on the run's shared server. Each file gets its own collection prefix (qdrantPrefix()); after
// the file, any new collection with that prefix — or with no file's prefix at all — is a leak.
// Collections of files running in parallel (their own prefixes) are not this file's business.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, inject } from "vitest";
import { listCollections, PREFIX_ENV, qdrantRequest } from "./qdrant.ts";

process.env[PREFIX_ENV] = `capstan_t${randomBytes(4).toString("hex")}`;
const mine = process.env[PREFIX_ENV];
const someFile = /^capstan_t[0-9a-f]{8}_/;
let before = new Set<string>();

beforeAll(async () => {
  before = new Set(await listCollections(inject("qdrantUrl")));
});

afterAll(async () => {
  const url = inject("qdrantUrl");
  const left = (await listCollections(url)).filter(
    (c) => !before.has(c) && (c.startsWith(`${mine}_`) || !someFile.test(c)),
  );
  if (left.length === 0) return;
  // Remove them so the next files start clean, then fail this one.
  for (const c of left) await qdrantRequest(`${url}/collections/${c}`, "DELETE");
  throw new Error(`this test file left Qdrant collections behind: ${left.join(", ")}`);
});
