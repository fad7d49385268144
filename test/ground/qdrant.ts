// A real Qdrant server (the vendored v1.18.3 binary) for tests: installed into the binary cache
// by scripts/setup.d/45-qdrant.sh (or here on first use), started on free loopback ports with its
// storage in a temporary folder, optionally with an API key or TLS, stopped and removed after.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent as HttpsAgent, get as httpsGet } from "node:https";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { binaryCacheDir } from "./kube.ts";
import { freePort } from "./ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "./process.ts";

export const QDRANT_VERSION = "1.18.3";
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The cached server binary, installed from ../shared/vendor/qdrant when missing. */
export function qdrantBinary(): string {
  if (process.env.QDRANT_BIN) return process.env.QDRANT_BIN;
  const bin = join(binaryCacheDir(), "qdrant", QDRANT_VERSION, "qdrant");
  if (!existsSync(bin)) {
    // The same script the setup runs: checksum-verified install, or a rebuild from source.
    execFileSync("bash", [join(repoRoot, "scripts/setup.d/45-qdrant.sh")], { stdio: "inherit" });
  }
  return bin;
}

export interface QdrantOptions {
  /** Every API call then needs this key (header api-key); /readyz stays open. */
  apiKey?: string;
  /** Serve HTTPS with this certificate and key (PEM files). */
  tls?: { cert: string; key: string; ca: string };
  /** Keep using this storage folder and these ports (a restart after kill). */
  dir?: string;
  httpPort?: number;
  /**
   * A peer of a Qdrant cluster (distributed mode, Raft): its peer-to-peer port, and the URI of a
   * peer already in the cluster to join (absent: it starts the cluster). qdrant-cluster.ts.
   */
  cluster?: { p2pPort: number; bootstrap?: string };
  /** The address it listens on (default 127.0.0.1), e.g. the e2e node's bridge address for pods. */
  host?: string;
}

export interface QdrantServer {
  url: string;
  httpPort: number;
  dir: string;
  proc: ManagedProcess;
  /** SIGKILL, as a crash would. Storage stays for a restart. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and storage. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function ready(url: string, ca?: string): Promise<boolean> {
  if (!ca) {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) });
    return res.status === 200;
  }
  return new Promise((resolveReady) => {
    const req = httpsGet(`${url}/readyz`, { agent: new HttpsAgent({ ca }), timeout: 1000 }, (res) => {
      res.resume();
      resolveReady(res.statusCode === 200);
    });
    req.on("error", () => resolveReady(false));
    req.on("timeout", () => req.destroy());
  });
}

function spawnQdrant(dir: string, httpPort: number, grpcPort: number, opts: QdrantOptions): ManagedProcess {
  // Every setting through the environment, so no config/ folder of the working directory applies.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    QDRANT__SERVICE__HOST: opts.host ?? "127.0.0.1",
    QDRANT__SERVICE__HTTP_PORT: String(httpPort),
    QDRANT__SERVICE__GRPC_PORT: String(grpcPort),
    QDRANT__STORAGE__STORAGE_PATH: join(dir, "storage"),
    QDRANT__STORAGE__SNAPSHOTS_PATH: join(dir, "snapshots"),
    QDRANT__TELEMETRY_DISABLED: "true",
    QDRANT__LOG_LEVEL: "WARN",
    QDRANT_INIT_FILE_PATH: join(dir, ".qdrant-initialized"),
    ...(opts.apiKey ? { QDRANT__SERVICE__API_KEY: opts.apiKey } : {}),
    ...(opts.cluster
      ? { QDRANT__CLUSTER__ENABLED: "true", QDRANT__CLUSTER__P2P__PORT: String(opts.cluster.p2pPort) }
      : {}),
    ...(opts.tls
      ? {
          QDRANT__SERVICE__ENABLE_TLS: "true",
          QDRANT__TLS__CERT: opts.tls.cert,
          QDRANT__TLS__KEY: opts.tls.key,
        }
      : {}),
  };
  const args = opts.cluster
    ? [
        "--uri",
        `http://${opts.host ?? "127.0.0.1"}:${opts.cluster.p2pPort}`,
        ...(opts.cluster.bootstrap ? ["--bootstrap", opts.cluster.bootstrap] : []),
      ]
    : [];
  return startProcess("qdrant", qdrantBinary(), args, env);
}

export async function startQdrant(opts: QdrantOptions = {}): Promise<QdrantServer> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "capstan-qdrant-"));
  const httpPort = opts.httpPort ?? (await freePort());
  const grpcPort = await freePort();
  const url = `${opts.tls ? "https" : "http"}://${opts.host ?? "127.0.0.1"}:${httpPort}`;
  const caPem = opts.tls ? readFileSync(opts.tls.ca, "utf8") : undefined;
  let proc = spawnQdrant(dir, httpPort, grpcPort, opts);
  const waitReady = () => waitFor("qdrant /readyz", () => ready(url, caPem), { timeoutMs: 30_000, proc });
  await waitReady();
  const server: QdrantServer = {
    url,
    httpPort,
    dir,
    get proc() {
      return proc;
    },
    kill: async () => {
      const exited = new Promise((r) => proc.child.once("exit", r));
      if (proc.child.exitCode === null && proc.child.signalCode === null) {
        proc.child.kill("SIGKILL");
        await exited;
      }
    },
    restart: async () => {
      proc = spawnQdrant(dir, httpPort, grpcPort, opts);
      await waitReady();
    },
    stop: async () => {
      await proc.stop();
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

/** Set per test file by qdrant-guard.ts: the collection prefix the file's stores must use. */
export const PREFIX_ENV = "CAPSTAN_TEST_QDRANT_PREFIX";

/** A collection prefix owned by the running test file (checked for leaks after the file). */
export function qdrantPrefix(name: string): string {
  const base = process.env[PREFIX_ENV];
  if (!base) throw new Error("qdrantPrefix() needs test/ground/qdrant-guard.ts as a setup file");
  return `${base}_${name}`;
}

/**
 * An idempotent request to the test server (GET or DELETE), sent again once when the kept-alive
 * socket it went out on had just been closed by the server: undici reuses a pooled connection, and
 * a request that races Qdrant's keep-alive timeout fails with "other side closed" (UND_ERR_SOCKET)
 * although the server is healthy. Any other failure is the test's business and is thrown.
 */
export async function qdrantRequest(url: string, method: "GET" | "DELETE" = "GET"): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await fetch(url, { method, signal: AbortSignal.timeout(10_000) });
      if (method === "DELETE") await res.arrayBuffer();
      return res;
    } catch (err) {
      const code = ((err as Error).cause as { code?: string } | undefined)?.code;
      if (attempt >= 2 || (code !== "UND_ERR_SOCKET" && code !== "ECONNRESET")) throw err;
    }
  }
}

/** Names of every collection on a server (no API key). */
export async function listCollections(url: string): Promise<string[]> {
  const res = await qdrantRequest(`${url}/collections`);
  if (!res.ok) throw new Error(`GET ${url}/collections: ${res.status}`);
  const body = (await res.json()) as { result: { collections: { name: string }[] } };
  return body.result.collections.map((c) => c.name).sort();
}

/** Deletes every collection whose name starts with prefix (test clean-up). */
export async function dropCollections(url: string, prefix: string): Promise<void> {
  for (const c of await listCollections(url)) {
    if (c.startsWith(prefix)) await qdrantRequest(`${url}/collections/${c}`, "DELETE");
  }
}
