// schemathesis against the search process (src/main.ts) as deployed in standalone mode: resources
// from YAML files, the embedded store and the local embedding model, a real SearchKey scoped to a
// knowledge base holding a few documents (so searches find passages); search_hooks.py scopes
// half of the generated queries to it, so they run the whole pipeline. Every case generated from
// the published /openapi.json must answer without a 5xx, within the request timeout, with a
// status, content type and body the document declares.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { hashKey } from "@capstan/shared";
import { afterAll, beforeAll, expect } from "vitest";
import type { ManagedProcess } from "../ground/process.ts";
import { HANDBOOK } from "../search/corpus.ts";
import { INTERNAL_TOKEN, ingest } from "../search/helpers.ts";
import { startService } from "./process.ts";
import { fuzzTests } from "./suite.ts";

const HOOKS = fileURLToPath(new URL("./search_hooks.py", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "capstan-fuzz-search-"));
const key = `fuzz-search-key-${process.pid}`;
let proc: ManagedProcess;
let origin: string;
let internalOrigin: string;

beforeAll(async () => {
  mkdirSync(join(dir, "resources"));
  // A rate no run of this file reaches: the 429 is documented, but the cases should reach search.
  writeFileSync(
    join(dir, "resources", "search.yaml"),
    [
      "apiVersion: capstan.dev/v1alpha1",
      "kind: KnowledgeBase",
      "metadata: {name: handbook, namespace: default}",
      "spec: {}",
      "---",
      "apiVersion: capstan.dev/v1alpha1",
      "kind: SearchKey",
      "metadata: {name: fuzz, namespace: default}",
      "spec: {keyName: fuzz, knowledgeIds: [kb_handbook], requestsPerMinute: 1000000}",
      `status: {keyHash: "${hashKey(key)}"}`,
      "",
    ].join("\n"),
  );
  const started = await startService(
    "search",
    {
      CAPSTAN_RESOURCES_DIR: join(dir, "resources"),
      CAPSTAN_INTERNAL_TOKEN: INTERNAL_TOKEN,
      CAPSTAN_DATA_DIR: join(dir, "data"),
    },
    async ({ internalOrigin }) => (await fetch(`${internalOrigin}/readyz`)).status === 200,
  );
  ({ proc, origin, internalOrigin } = started);
  await ingest(started.internalOrigin, "kb_handbook", HANDBOOK.slice(0, 6));
}, 180_000);

afterAll(async () => {
  await proc?.stop();
  rmSync(dir, { recursive: true, force: true });
});

fuzzTests(
  "search",
  () => ({ origin, key, proc, env: { SCHEMATHESIS_HOOKS: HOOKS, CAPSTAN_FUZZ_KB: "kb_handbook" } }),
  { maxExamples: 25, hardTimeoutS: 150, requestTimeoutS: 15 },
  async () => {
    // The cases reached the search pipeline (not all refused before it): queries were embedded.
    const metrics = await (await fetch(`${internalOrigin}/metrics`)).text();
    expect(metrics).toMatch(/capstan_search_stage_duration_seconds_count\{stage="embed"\} [1-9]/);
  },
);
