// The search process as deployed: `node services/search/src/main.ts` configured by env, resources
// from a folder of YAML (standalone mode), the embedded store persisted in CAPSTAN_DATA_DIR,
// SIGTERM shutdown; and a clear exit for bad configuration.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { hashKey } from "@capstan/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";
import { HANDBOOK } from "./corpus.ts";
import { call, INTERNAL_TOKEN, ingest } from "./helpers.ts";

const MAIN = fileURLToPath(new URL("../../services/search/src/main.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "capstan-search-proc-"));
const resources = join(dir, "resources");
let proc: ManagedProcess;
let url: string;
let internalUrl: string;

beforeAll(async () => {
  spawnSync("mkdir", ["-p", resources]);
  writeFileSync(
    join(resources, "search.yaml"),
    [
      "apiVersion: capstan.dev/v1alpha1",
      "kind: KnowledgeBase",
      "metadata: {name: handbook, namespace: default}",
      "spec: {}",
      "---",
      "apiVersion: capstan.dev/v1alpha1",
      "kind: SearchKey",
      "metadata: {name: reader, namespace: default}",
      "spec: {keyName: reader, knowledgeIds: [kb_handbook], allowedCIDRs: [127.0.0.1/32, '::1/128']}",
      `status: {keyHash: "${hashKey("proc-key")}"}`,
      "",
    ].join("\n"),
  );
  const port = await freePort();
  const internalPort = await freePort();
  url = `http://127.0.0.1:${port}`;
  internalUrl = `http://127.0.0.1:${internalPort}`;
  proc = startProcess("search", process.execPath, [MAIN], {
    ...process.env,
    PORT: String(port),
    CAPSTAN_INTERNAL_PORT: String(internalPort),
    HOST: "127.0.0.1",
    CAPSTAN_RESOURCES_DIR: resources,
    CAPSTAN_INTERNAL_TOKEN: INTERNAL_TOKEN,
    CAPSTAN_DATA_DIR: join(dir, "data"),
    LOG_LEVEL: "warn",
    OTEL_SDK_DISABLED: "true",
  });
  await waitFor("search ready", async () => (await statusOf(`${internalUrl}/readyz`)) === 200, {
    timeoutMs: 120_000,
    proc,
  });
});
afterAll(async () => {
  await proc?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A GET's status, with the body read: an unread body keeps its kept-alive socket, and the process
 * stopping later (the SIGTERM test) would surface as an unhandled "other side closed" error.
 */
async function statusOf(target: string): Promise<number> {
  const res = await fetch(target);
  await res.arrayBuffer();
  return res.status;
}

describe("search process", () => {
  it("serves health, metrics, ingestion and search from env configuration", async () => {
    expect(await statusOf(`${internalUrl}/healthz`)).toBe(200);
    // Health, metrics and the documents API are on the internal port only.
    expect(await statusOf(`${url}/healthz`)).toBe(404);
    await ingest(internalUrl, "kb_handbook", HANDBOOK.slice(0, 4));
    const r = await call<{ docsId: string }[]>(url, "/v1/rag/search", {
      token: "proc-key",
      body: { knowledgeIds: ["kb_handbook"], text: "Will the company pay me back for my business trip costs?" },
    });
    expect(r.status).toBe(200);
    expect(r.body.data?.[0]?.docsId).toBe("expense-claims");
    const metrics = await (await fetch(`${internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/capstan_search_stage_duration_seconds_count\{stage="embed"\} [1-9]/);
    expect(metrics).toMatch(/capstan_search_stage_duration_seconds_count\{stage="vector"\} [1-9]/);
    expect(metrics).toMatch(/capstan_search_stage_duration_seconds_count\{stage="rerank"\} [1-9]/);
    expect(metrics).toMatch(/capstan_search_ingested_chunks_total 4/);
  });

  it("stops cleanly on SIGTERM", async () => {
    await proc.stop();
    expect(proc.child.exitCode).toBe(0);
  });

  it("exits with a message naming the bad setting", () => {
    const out = spawnSync(process.execPath, [MAIN], {
      env: {
        ...process.env,
        CAPSTAN_RESOURCES_DIR: resources,
        CAPSTAN_TRUSTED_PROXIES: "not-a-cidr",
        OTEL_SDK_DISABLED: "true",
      },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(out.status).toBe(2);
    expect(out.stderr).toMatch(/trustedProxies/);
  });
});
