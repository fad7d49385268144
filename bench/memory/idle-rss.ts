// Idle resident memory of Capstan's processes after 1,000 requests, each run as its image runs
// it: the bundle scripts/images/bundle.mjs writes, started with `node <flags> <bundle>/main.mjs`
// and the environment its image sets, both read from the tree's Dockerfile (image-env.ts: ENV of
// the target's stages, the node flags of its CMD), the operator with its chart's NODE_OPTIONS too.
// With BENCH_BEFORE=<checkout> the previous tree's process (its bundle and its Dockerfile's
// settings; its sources with `node src/main.ts` when it has no bundle.mjs) is measured in the
// same run, one after the other, for the ratio.
//
//   node bench/memory/idle-rss.ts [--smoke]   BENCH_SERVICES=gateway,console,search,operator (default all)
//                                             BENCH_BEFORE=/work/main  REQUESTS=1000  IDLE_S=10,30
//                                             NODE_FLAGS="..." (more node flags of the processes measured)
//                                             BENCH_ENV="K=V ..." (more environment, bench/env.ts)
//
// gateway: chat completions through an LLM Agent on the loopback fake provider (which reports
// usage), no Redis. console: standalone mode (a YAML folder), signed in, listing Agents.
// search: the embedded store and the default model, one document ingested, then searches.
// operator: AccessChannels created and reconciled on a private API server (operator-run.ts).
// After the requests, the process is left without traffic and VmRSS, Pss and the peak (VmHWM)
// are read from /proc at each of IDLE_S's moments (seconds after the last request: 10 and 30 by
// default; search's documents worker closes 10 s after its last documents, each process's idle
// collection runs after 5 s of quiet), with where the resident memory is at the last (breakdown.ts). Every request must answer as expected (bench/work.ts),
// or the run stops.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SearchClient } from "@capstan/shared/clients/search-client";
import { Pool } from "undici";
import { freePort } from "../../test/ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../../test/ground/process.ts";
import { envPairs } from "../env.ts";
import { CHAT_BODY, cleanup, completionContent, startFakeUpstream, writeResources } from "../gateway/harness.ts";
import { expectCount, sized, workChecked } from "../work.ts";
import { describe, heapOf, mappings, threadsOf } from "./breakdown.ts";
import { imageRun } from "./image-env.ts";
import { chartNodeOptions, runOperator } from "./operator-run.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const REQUESTS = Number(process.env.REQUESTS ?? sized(1000, 20));
/** When to read the memory, seconds after the last request (increasing). */
const IDLE_AT = (process.env.IDLE_S ?? sized("10,30", "1")).split(",").map(Number);
const SERVICES = (process.env.BENCH_SERVICES ?? "gateway,console,search,operator").split(",");
const BEFORE = process.env.BENCH_BEFORE;
const NODE_FLAGS = (process.env.NODE_FLAGS ?? "").split(" ").filter(Boolean);
const EXTRA_ENV = envPairs(process.env.BENCH_ENV);
const scratch = mkdtempSync(join(tmpdir(), "capstan-rss-"));
const mib = (kb: number) => `${(kb / 1024).toFixed(1)} MiB`;
/** Each service's package folder (its bundle's main.mjs is under <folder>/src/). */
const FOLDER: Record<string, string> = {
  gateway: "services/gateway",
  search: "services/search",
  console: "console",
  operator: "operator",
};

/** How one tree runs a service's process: entry point, node flags, environment. */
interface Launch {
  entry: string;
  flags: string[];
  env: Record<string, string>;
}

/** `root`'s process for `service` as its image runs it (its sources when it has no bundle.mjs). */
function launchOf(root: string, service: string, label: string): Launch {
  const folder = FOLDER[service] as string;
  const image = imageRun(root, service) ?? { env: {}, flags: [] };
  const env = { ...image.env };
  // The chart's NODE_OPTIONS replace the image's for the operator.
  if (service === "operator" && chartNodeOptions(root)) env.NODE_OPTIONS = chartNodeOptions(root);
  if (!existsSync(join(root, "scripts/images/bundle.mjs"))) {
    return { entry: join(root, folder, "src/main.ts"), flags: image.flags, env };
  }
  const out = join(scratch, `bundle-${label.replace(/[^a-z0-9]+/gi, "-")}-${service}`);
  execFileSync(process.execPath, [join(root, "scripts/images/bundle.mjs"), service, out], { cwd: root });
  return { entry: join(out, folder, "src/main.mjs"), flags: image.flags, env };
}

const arms = [{ label: "this tree", root: ROOT }];
if (BEFORE) arms.push({ label: `before (${BEFORE})`, root: BEFORE });

function memoryOf(pid: number): { rss: number; pss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  const kb = (text: string, key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(text)?.[1] ?? Number.NaN);
  return { rss: kb(status, "VmRSS"), pss: kb(rollup, "Pss"), peak: kb(status, "VmHWM") };
}

/** Starts the process `launch` describes with `env` and waits until `readyUrl` answers 200. */
type Start = (env: Record<string, string>, readyUrl: string) => Promise<ManagedProcess>;

function starter(name: string, launch: Launch): Start {
  return async (env, readyUrl) => {
    const proc = startProcess(name, process.execPath, [...launch.flags, ...NODE_FLAGS, launch.entry], {
      ...process.env,
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      NODE_ENV: "production",
      ...launch.env,
      ...env,
      ...EXTRA_ENV,
    });
    await waitFor(`${name} ready`, async () => (await fetch(readyUrl)).status === 200, { timeoutMs: 120_000, proc });
    return proc;
  };
}

/** `total` requests over `width` connections; each answer must pass `ok`. */
async function drive(
  origin: string,
  total: number,
  request: () => Parameters<Pool["request"]>[0],
  ok: (status: number, body: string) => boolean,
) {
  const pool = new Pool(origin, { connections: 8 });
  let sent = 0;
  let good = 0;
  let first = "";
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (sent < total) {
        sent++;
        const res = await pool.request(request());
        const body = await res.body.text();
        if (ok(res.statusCode, body)) good++;
        else first ||= `${res.statusCode} ${body.slice(0, 200)}`;
      }
    }),
  );
  await pool.close();
  expectCount(`answers as expected${first ? ` (first other: ${first})` : ""}`, good, total);
}

/** A started process after its requests, and the URL of its Prometheus page (for the V8 heap). */
type Started = { proc: ManagedProcess; metrics: string; stop?: () => Promise<void> };
type Service = (start: Start) => Promise<Started>;

const services: Record<string, Service> = {
  async gateway(start) {
    const upstream = await startFakeUpstream();
    const { dir, key } = writeResources({ providerURL: upstream, qpm: 1_000_000 });
    const [port, internal] = [await freePort(), await freePort()];
    const proc = await start(
      {
        PORT: String(port),
        CAPSTAN_INTERNAL_PORT: String(internal),
        CAPSTAN_RESOURCES_DIR: dir,
        CAPSTAN_EGRESS_ALLOWED_HOSTS: "127.0.0.1",
      },
      `http://127.0.0.1:${internal}/readyz`,
    );
    await drive(
      `http://127.0.0.1:${port}`,
      REQUESTS,
      () => ({
        method: "POST",
        path: "/api/v1/chat/completions",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: CHAT_BODY,
      }),
      (status, body) => status === 200 && completionContent(body) !== undefined,
    );
    return { proc, metrics: `http://127.0.0.1:${internal}/metrics` };
  },

  async console(start) {
    const dir = mkdtempSync(join(scratch, "console-"));
    mkdirSync(join(dir, "resources"));
    mkdirSync(join(dir, "state"));
    writeFileSync(
      join(dir, "resources/agent.yaml"),
      "apiVersion: capstan.dev/v1alpha1\nkind: Agent\nmetadata: {name: bench, namespace: default}\nspec:\n  description: bench\n",
    );
    writeFileSync(join(dir, "token"), "bench-admin-token\n");
    const [port, internal] = [await freePort(), await freePort()];
    const proc = await start(
      {
        PORT: String(port),
        CAPSTAN_INTERNAL_PORT: String(internal),
        CAPSTAN_CONSOLE_STANDALONE_RESOURCES_DIR: join(dir, "resources"),
        CAPSTAN_CONSOLE_STANDALONE_STATE_DIR: join(dir, "state"),
        CAPSTAN_CONSOLE_ADMIN_TOKEN_FILE: join(dir, "token"),
        CAPSTAN_CONSOLE_SIGN_IN_PER_MINUTE: "1000",
        // The page's assets: this tree's console/dist when built, else none (the API is what runs).
        CAPSTAN_CONSOLE_ASSETS_DIR: join(ROOT, "console/dist"),
      },
      `http://127.0.0.1:${internal}/readyz`,
    );
    const signIn = await fetch(`http://127.0.0.1:${port}/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: "bench-admin-token" }),
    });
    const cookie = signIn.headers.get("set-cookie")?.split(";")[0] ?? "";
    expectCount("sign-ins with a session cookie", signIn.ok && cookie ? 1 : 0, 1);
    await drive(
      `http://127.0.0.1:${port}`,
      REQUESTS,
      () => ({ method: "GET", path: "/api/namespaces/default/agents", headers: { cookie } }),
      (status, body) => status === 200 && body.includes('"bench"'),
    );
    return { proc, metrics: `http://127.0.0.1:${internal}/metrics` };
  },

  async search(start) {
    const dir = mkdtempSync(join(scratch, "search-"));
    mkdirSync(join(dir, "resources"));
    writeFileSync(
      join(dir, "resources/kb.yaml"),
      "apiVersion: capstan.dev/v1alpha1\nkind: KnowledgeBase\nmetadata: {name: bench, namespace: bench}\nspec:\n  knowledgeId: kb_bench\n  embedding: {provider: local, model: all-MiniLM-L6-v2}\n",
    );
    const [port, internal] = [await freePort(), await freePort()];
    const token = "bench-internal-token-0123456789abcdef";
    const proc = await start(
      {
        PORT: String(port),
        CAPSTAN_INTERNAL_PORT: String(internal),
        CAPSTAN_RESOURCES_DIR: join(dir, "resources"),
        CAPSTAN_INTERNAL_TOKEN: token,
        CAPSTAN_DATA_DIR: join(dir, "vectors"),
      },
      `http://127.0.0.1:${internal}/readyz`,
    );
    const client = new SearchClient({
      baseURL: `http://127.0.0.1:${internal}`,
      token,
      namespace: "bench",
      ingestTimeoutMs: 600_000,
    });
    const kb = { namespace: "bench", knowledgeId: "kb_bench" };
    await client.ensureKnowledgeBase(kb);
    const text = readFileSync(join(ROOT, "README.md"), "utf8");
    const { chunks } = await client.upsertDocument(kb, "readme", { docsName: "README.md", text });
    expectCount("document ingested", chunks > 0 ? 1 : 0, 1);
    const body = JSON.stringify({
      knowledgeIds: ["kb_bench"],
      text: "How do I install the platform?",
      minSimilarity: 0,
    });
    await drive(
      `http://127.0.0.1:${internal}`,
      REQUESTS,
      () => ({
        method: "POST",
        path: "/v1/rag/search",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${token}`,
          "x-capstan-namespace": "bench",
        },
        body,
      }),
      (status, answer) => status === 200 && answer.includes("readme"),
    );
    return { proc, metrics: `http://127.0.0.1:${internal}/metrics` };
  },

  operator: (start) => runOperator(start, REQUESTS),
};

const rows: string[] = [];
try {
  for (const service of SERVICES) {
    const run = services[service];
    if (!run) throw new Error(`unknown service ${service} (${Object.keys(services).join(", ")})`);
    const figures: { label: string; rss: number; pss: number; peak: number }[] = [];
    for (const arm of arms) {
      const { proc, metrics, stop } = await run(starter(service, launchOf(arm.root, service, arm.label)));
      const pid = proc.child.pid as number;
      const lastRequest = Date.now();
      for (const at of IDLE_AT) {
        await new Promise((r) => setTimeout(r, Math.max(0, lastRequest + at * 1000 - Date.now())));
        figures.push({ label: `${arm.label}, ${at} s idle`, ...memoryOf(pid) });
      }
      console.log(
        `${service}\t${arm.label}\t${describe({ rssKiB: mappings(pid), threads: threadsOf(pid), heap: await heapOf(metrics) })}`,
      );
      await cleanup();
      await proc.stop();
      await stop?.();
    }
    const mine = rows.length;
    for (const f of figures) {
      rows.push(`${service}\t${f.label}\tRSS ${mib(f.rss)}\tPSS ${mib(f.pss)}\tpeak RSS ${mib(f.peak)}`);
    }
    if (arms.length === 2) {
      // The same moment of each arm: this tree's figures come first, the before's after them.
      IDLE_AT.forEach((at, i) => {
        const [after, before] = [figures[i], figures[i + IDLE_AT.length]];
        if (after && before) rows.push(`${service}\t${at} s idle: ${(after.rss / before.rss).toFixed(2)} of before`);
      });
    }
    console.log(rows.slice(mine).join("\n"));
  }
} finally {
  await cleanup();
  // A process may still be writing its data folder as it ends: retried, never masking an error.
  rmSync(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
workChecked(`${REQUESTS} requests per process answered as expected; load ${loadavg()[0]?.toFixed(1)}`);
console.log(rows.join("\n"));
