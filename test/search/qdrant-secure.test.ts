// Search against a secured real Qdrant: one server with an API key over HTTPS (a CA generated
// here with openssl), configured as a deployment would be (QDRANT_URL, QDRANT_API_KEY_FILE,
// QDRANT_CA_FILE). The right key and CA work; a wrong key or an untrusted certificate gives a
// clear error and a 503 in the search envelope, and the key never shows in logs or errors.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { createLogger } from "@capstan/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSearchConfig } from "../../services/search/src/config.ts";
import { createStore } from "../../services/search/src/store/factory.ts";
import { QdrantStore } from "../../services/search/src/store/qdrant.ts";
import { type QdrantServer, startQdrant } from "../ground/qdrant.ts";
import { HANDBOOK } from "./corpus.ts";
import { call, ingest, knowledgeBase, type Running, searchKey, startSearch } from "./helpers.ts";

const KEY = "qdrant-test-key-6f1c2a9e4b7d";
const WRONG = "qdrant-wrong-key-0000deadbeef";
const SEARCH_KEY = "cap_srch_secure";
let dir: string;
let server: QdrantServer;

function openssl(args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
}

/** A CA and a server certificate for 127.0.0.1 / localhost signed by it (what an operator would mount). */
function makeCerts(): void {
  openssl(
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt"].concat([
      "-days",
      "2",
      "-subj",
      "/CN=capstan-qdrant-test-ca",
    ]),
  );
  openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr", "-subj", "/CN=qdrant"]);
  writeFileSync(join(dir, "tls.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  openssl(
    ["x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial"].concat([
      "-out",
      "tls.crt",
      "-days",
      "2",
      "-extfile",
      "tls.ext",
    ]),
  );
  // A second, unrelated CA: trusting it must not be enough.
  openssl(
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out", "other.crt"].concat([
      "-days",
      "2",
      "-subj",
      "/CN=someone-else",
    ]),
  );
}

/** A logger whose every line is kept, to prove the key is never written. */
function capturedLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { lines, logger: createLogger({ name: "search", level: "debug", destination }) };
}

function storeWith(env: Record<string, string>) {
  const { lines, logger } = capturedLogger();
  const config = loadSearchConfig({ ...env, CAPSTAN_QDRANT_COLLECTION_PREFIX: "capstan_secure" });
  return { lines, logger, config, store: createStore(config, logger) };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "capstan-qdrant-tls-"));
  makeCerts();
  writeFileSync(join(dir, "api-key"), `${KEY}\n`);
  writeFileSync(join(dir, "wrong-key"), WRONG);
  server = await startQdrant({
    apiKey: KEY,
    tls: { cert: join(dir, "tls.crt"), key: join(dir, "tls.key"), ca: join(dir, "ca.crt") },
  });
});
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const info = { knowledgeId: "kb_secure", model: "test:model", dimensions: 4, chunking: { size: 800, overlap: 100 } };

describe("Qdrant with an API key over TLS", () => {
  it("works with the key from a file and the CA bundle, and logs neither", async () => {
    const { lines, store } = storeWith({
      QDRANT_URL: server.url,
      QDRANT_API_KEY_FILE: join(dir, "api-key"),
      QDRANT_CA_FILE: join(dir, "ca.crt"),
    });
    const s = await store;
    try {
      await s.ensureCollection(info);
      expect(await s.stats("kb_secure")).toEqual({ documents: 0, chunks: 0 });
      expect(await s.dropCollection("kb_secure")).toBe(true);
    } finally {
      await s.close();
    }
    expect(lines.join("")).toContain("vector store: qdrant");
    expect(lines.join("")).not.toContain(KEY);
  });

  it("a wrong key fails with a clear error that does not carry either key", async () => {
    const store = new QdrantStore({
      url: server.url,
      apiKey: WRONG,
      ca: readFileSync(join(dir, "ca.crt"), "utf8"),
      maxRetries: 0,
    });
    const err = (await store.getCollection("kb_secure").catch((e: unknown) => e)) as Error;
    await store.close();
    expect(err.message).toMatch(/\(401\).*API key was refused/);
    expect(`${err.message} ${err.stack}`).not.toContain(WRONG);
    expect(`${err.message} ${err.stack}`).not.toContain(KEY);
  });

  it("an untrusted certificate or plain HTTP fails clearly", async () => {
    const envs: Record<string, string>[] = [
      { QDRANT_URL: server.url, QDRANT_API_KEY: KEY },
      { QDRANT_URL: server.url, QDRANT_API_KEY: KEY, QDRANT_CA_FILE: join(dir, "other.crt") },
    ];
    for (const env of envs) {
      const s = await storeWith(env).store;
      await expect(s.getCollection("kb_secure")).rejects.toThrow(/SELF_SIGNED|UNABLE_TO_VERIFY|certificate/i);
      await s.close();
    }
    const plain = await storeWith({ QDRANT_URL: server.url.replace("https:", "http:"), QDRANT_API_KEY: KEY }).store;
    await expect(plain.getCollection("kb_secure")).rejects.toThrow(/qdrant/);
    await plain.close();
  });

  it("a missing key file stops the start with a clear error", async () => {
    await expect(
      storeWith({ QDRANT_URL: server.url, QDRANT_API_KEY_FILE: join(dir, "no-such-file") }).store,
    ).rejects.toThrow(/cannot read the Qdrant API key file .*ENOENT/);
  });
});

describe("the search service on a secured Qdrant", () => {
  let good: Running;
  let bad: Running;
  const { lines, logger } = capturedLogger();
  const kbs = [knowledgeBase("secure")];
  const keys = [searchKey("s", SEARCH_KEY, { knowledgeIds: ["kb_secure"] })];

  beforeAll(async () => {
    const qdrant = { url: server.url, caFile: join(dir, "ca.crt"), collectionPrefix: "capstan_secure" };
    good = await startSearch({ kbs, keys, config: { qdrant: { ...qdrant, apiKeyFile: join(dir, "api-key") } } });
    await ingest(good.internalUrl, "kb_secure", HANDBOOK.slice(0, 2));
    bad = await startSearch({
      kbs,
      keys,
      logger,
      config: { qdrant: { ...qdrant, apiKeyFile: join(dir, "wrong-key") } },
    });
  });
  afterAll(async () => {
    await call(good.internalUrl, "/internal/v1/namespaces/default/knowledge-bases/kb_secure", {
      method: "DELETE",
      token: "test-internal-token-0123456789",
    });
    await good?.close();
    await bad?.close();
    // The collections of this server go with its storage folder; none is on the run's server.
  });

  it("searches with the right key; a wrong key answers 503 in the envelope and never logs a key", async () => {
    const body = { knowledgeIds: ["kb_secure"], text: HANDBOOK[0]?.text.slice(0, 120), minSimilarity: 0.5 };
    const ok = await call<unknown[]>(good.url, "/v1/rag/search", { token: SEARCH_KEY, body });
    expect(ok.status).toBe(200);
    expect(ok.body.data?.length).toBeGreaterThan(0);
    const r = await call(bad.url, "/v1/rag/search", { token: SEARCH_KEY, body });
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ code: 503, data: null });
    expect(r.body.message).toMatch(/vector store unavailable: .*API key was refused/);
    expect(JSON.stringify(r.body)).not.toContain(WRONG);
    const logged = lines.join("");
    expect(logged).not.toContain(WRONG);
    expect(logged).not.toContain(KEY);
  });
});
