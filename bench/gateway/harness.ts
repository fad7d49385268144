// What the gateway benchmarks share: a private Redis, the fake provider and gateway processes
// (src/main.ts, as deployed) on free loopback ports, resources written as YAML, and a precise
// closed-loop latency probe (autocannon's histogram has 1 ms resolution; added latency needs µs)
// that counts only real completions, and the checks every gateway benchmark makes of its work.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateKey, hashKey } from "@capstan/shared";
import { Pool } from "undici";
import { freePort } from "../../test/ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../../test/ground/process.ts";
import { expectWork } from "../work.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const procs: ManagedProcess[] = [];
const dirs: string[] = [];

export async function cleanup(): Promise<void> {
  await Promise.allSettled(procs.map((p) => p.stop()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}

export async function startFakeUpstream(): Promise<string> {
  const proc = startProcess("fake-upstream", process.execPath, [join(ROOT, "bench/gateway/fake-upstream-server.ts")]);
  procs.push(proc);
  let url = "";
  await waitFor(
    "fake upstream",
    async () => {
      url =
        proc
          .output()
          .split("\n")
          .find((l) => l.startsWith("http://")) ?? "";
      return url !== "";
    },
    { timeoutMs: 30_000, proc },
  );
  return url.trim();
}

/** Writes an Agent on the given provider and one channel; returns the folder and the key. */
export function writeResources(opts: { providerURL?: string; qpm: number; agentSpec?: string }): {
  dir: string;
  key: string;
} {
  const dir = mkdtempSync(join(tmpdir(), "gw-bench-"));
  dirs.push(dir);
  const key = generateKey("chat");
  // agentSpec: the Agent's spec as YAML lines (indented two spaces), instead of one provider.
  const provider =
    opts.agentSpec ??
    (opts.providerURL
      ? `  provider:\n    baseURL: ${opts.providerURL}/v1\n    model: echo\n    maxRetries: 0\n`
      : "  description: offline\n");
  writeFileSync(
    join(dir, "resources.yaml"),
    `apiVersion: capstan.dev/v1alpha1
kind: Agent
metadata: {name: bench, namespace: bench}
spec:
${provider}---
apiVersion: capstan.dev/v1alpha1
kind: AccessChannel
metadata: {name: bench-${Date.now().toString(36)}, namespace: bench}
spec:
  channelName: bench
  agentRef: {name: bench}
  qpm: ${opts.qpm}
status:
  keyHash: "${hashKey(key)}"
`,
  );
  return { dir, key };
}

/** The internal URL (metrics, health) of each gateway started here, by its public URL. */
const internalUrls = new Map<string, string>();
export function internalUrlOf(url: string): string {
  return internalUrls.get(url) ?? url;
}

/** Starts `services/gateway/src/main.ts` of this tree (or of another checkout, `root`, for a before/after). */
export async function startGatewayProcess(
  env: Record<string, string>,
  root = ROOT,
  nodeFlags = process.env.BENCH_GATEWAY_NODE_FLAGS,
): Promise<string> {
  const [port, internalPort] = [await freePort(), await freePort()];
  // BENCH_GATEWAY_NODE_FLAGS (or nodeFlags): flags for the gateway's node only (V8's
  // --trace-deopt, say, which NODE_OPTIONS refuses); its output goes to CAPSTAN_GROUND_LOGS/gateway.log.
  const flags = (nodeFlags ?? "").split(" ").filter(Boolean);
  const proc = startProcess("gateway", process.execPath, [...flags, join(root, "services/gateway/src/main.ts")], {
    ...process.env,
    PORT: String(port),
    CAPSTAN_INTERNAL_PORT: String(internalPort),
    // The fake provider listens on loopback, which the egress policy refuses unless listed.
    CAPSTAN_EGRESS_ALLOWED_HOSTS: "127.0.0.1",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    ...env,
  });
  procs.push(proc);
  // BENCH_GATEWAY_CPUS (a taskset list, "1"): the gateway on CPUs of its own, apart from the load
  // generator, the fake provider and Redis (run the bench itself under `taskset -c 0`), so what
  // the gateway costs is not mixed with what its neighbours' scheduling costs it.
  if (process.env.BENCH_GATEWAY_CPUS)
    execFileSync("taskset", ["-a", "-cp", process.env.BENCH_GATEWAY_CPUS, String(proc.child.pid)], { stdio: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  const internalUrl = `http://127.0.0.1:${internalPort}`;
  internalUrls.set(url, internalUrl);
  await waitFor("gateway ready", async () => (await fetch(`${internalUrl}/readyz`)).status === 200, {
    timeoutMs: 60_000,
    proc,
  });
  return url;
}

export const CHAT_BODY = JSON.stringify({ model: "bench", messages: [{ role: "user", content: "hello benchmark" }] });

export interface Probe {
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  /** Answers that were 200 with a completion's content (an assistant message that is not empty). */
  count: number;
  errors: number;
  /** The first answer that was not a completion, for the error that names it. */
  firstError?: string;
}

/** The content of a chat completion's first choice, or undefined when the body is not one. */
export function completionContent(body: string): string | undefined {
  try {
    const content = (JSON.parse(body) as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]?.message
      ?.content;
    return typeof content === "string" && content.length > 0 ? content : undefined;
  } catch {
    return undefined;
  }
}

/** Stops the benchmark unless every request of the probe was answered with a completion. */
export function expectAnswered(what: string, p: Probe, total: number): void {
  expectWork(
    p.count === total && p.errors === 0,
    `${what}: ${total} completions expected, ${p.count} seen, ${p.errors} other answers (first: ${p.firstError})`,
  );
}

/** Chat completions the gateway sent upstream so far (its upstream histogram's count, every label). */
export async function upstreamCalls(url: string): Promise<number> {
  const text = await (await fetch(`${internalUrlOf(url)}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("capstan_gateway_upstream_duration_seconds_count"))
    .reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** Closed loop: `concurrency` workers send `total` requests, timing each with performance.now(). */
export async function probeLatency(
  origin: string,
  path: string,
  headers: Record<string, string>,
  opts: { total: number; concurrency: number },
): Promise<Probe> {
  const pool = new Pool(origin, { connections: opts.concurrency, pipelining: 1 });
  const times: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let sent = 0;
  const worker = async () => {
    while (sent < opts.total) {
      sent++;
      const t0 = performance.now();
      const res = await pool.request({
        method: "POST",
        path,
        headers: { "content-type": "application/json", ...headers },
        body: CHAT_BODY,
      });
      const body = await res.body.text();
      const dt = performance.now() - t0;
      if (res.statusCode === 200 && completionContent(body) !== undefined) times.push(dt);
      else {
        errors++;
        firstError ??= `${res.statusCode} ${body.slice(0, 200)}`;
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  await pool.close();
  times.sort((a, b) => a - b);
  const mean = times.reduce((s, t) => s + t, 0) / Math.max(1, times.length);
  return {
    p50: percentile(times, 50),
    p90: percentile(times, 90),
    p99: percentile(times, 99),
    mean,
    count: times.length,
    errors,
    ...(firstError ? { firstError } : {}),
  };
}

export const fmt = (ms: number) => `${ms.toFixed(3)} ms`;

/** CPU time (user + system, ms) a process has used so far, from /proc (Linux). */
export function cpuMs(pid: number): number {
  return ticksMs(readFileSync(`/proc/${pid}/stat`, "utf8"));
}

/** User + system CPU of a /proc stat line, in ms. */
function ticksMs(stat: string): number {
  const fields = (stat.split(") ")[1] ?? "").split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks * 10; // USER_HZ is 100 on Linux
}

/**
 * CPU ms of a process's main thread (the JavaScript, the CPU profile's view) and of its other
 * threads (V8's garbage collector and compiler helpers, libuv's pool), which no CPU profile shows.
 */
export function threadCpuMs(pid: number): { main: number; other: number } {
  const main = ticksMs(readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8"));
  return { main, other: cpuMs(pid) - main };
}
