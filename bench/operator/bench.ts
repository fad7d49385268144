// Operator benchmark on a private etcd + kube-apiserver: (1) N AccessChannels created at once,
// time until all are Ready; (2) API writes during a forced resync of every cached object in
// steady state; (3) RSS of the process with TOTAL AccessChannels (+ their key Secrets) cached.
//   node bench/operator/bench.ts            (CHANNELS=1000 TOTAL=10000 by default)
//   node bench/operator/bench.ts --smoke    (CHANNELS=3 TOTAL=6)
// bench/operator/ab.sh runs it with and without client-node, with the same flags.
//
// Every wait is bounded and reports instead of hanging: a progress line every PROGRESS_S (30 s)
// while waiting, and a phase that runs out of time (READY_TIMEOUT_S, FILL_TIMEOUT_S, QUIET_TIMEOUT_S)
// prints what it reached (RESULT with "complete": false) and exits 1 naming what it did not reach.
// Each phase's figures are printed only once the API server's own view agrees with the operator's
// counts (every channel Ready with its key Secret) and the resync reconciled every channel: a
// resync that reconciled nothing would "write nothing" too.
import { fork } from "node:child_process";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { startKube } from "../../test/ground/kube.ts";
import { expectAtLeast, MissingWorkError, sized, workChecked } from "../work.ts";
import { Driver, DriverError, expectChannelsDone, installCrds, seedNamespace } from "./driver.ts";
import { LAYER } from "./layer.ts";

const CHANNELS = Number(process.env.CHANNELS ?? sized(1000, 3));
const TOTAL = Number(process.env.TOTAL ?? sized(10_000, 6));
/** Creates in flight at once (the driver's pooled connections). */
const WIDTH = Number(process.env.WIDTH ?? 32);
/** While filling: channels created but not yet Ready, at most. */
const WINDOW = Number(process.env.WINDOW ?? 500);
const READY_TIMEOUT_MS = Number(process.env.READY_TIMEOUT_S ?? 900) * 1000;
const FILL_TIMEOUT_MS = Number(process.env.FILL_TIMEOUT_S ?? 2400) * 1000;
const QUIET_TIMEOUT_MS = Number(process.env.QUIET_TIMEOUT_S ?? 300) * 1000;
const PROGRESS_MS = Number(process.env.PROGRESS_S ?? 30) * 1000;
const ns = "bench";
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MB`;
const load = () => loadavg()[0] as number;
const loads: number[] = [];
const sampler = setInterval(() => loads.push(load()), 10_000);
sampler.unref();

async function pool<T>(items: T[], width: number, fn: (t: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (i < items.length) await fn(items[i++] as T);
    }),
  );
}

/**
 * Creates AccessChannels ch-<from>..ch-<to-1>, WIDTH at a time. Never throws: a create the API
 * server still refuses after 5 tries (e.g. 504 when it is starved of CPU) is counted and skipped.
 * `gate`, when given, is awaited before each create and stops the creation when it answers false.
 */
async function createChannels(
  client: Driver,
  from: number,
  to: number,
  gate?: () => Promise<boolean>,
): Promise<{ created: number; failed: number }> {
  const names = Array.from({ length: to - from }, (_, k) => `ch-${from + k}`);
  const counts = { created: 0, failed: 0 };
  await pool(names, WIDTH, async (name) => {
    if (gate && !(await gate())) return;
    // A slow API server may time a create out after storing it: a retry then finds it there.
    for (let attempt = 1; ; attempt++) {
      try {
        await client.json(`/apis/capstan.dev/v1alpha1/namespaces/${ns}/accesschannels`, {
          method: "POST",
          body: {
            apiVersion: "capstan.dev/v1alpha1",
            kind: "AccessChannel",
            metadata: { name, namespace: ns },
            spec: { channelName: name, agentRef: { name: "agent" } },
          },
        });
        counts.created += 1;
        return;
      } catch (err) {
        if (err instanceof DriverError && err.status === 409) {
          counts.created += 1;
          return;
        }
        if (attempt >= 5) {
          counts.failed += 1;
          console.log(`[!] ${name} not created: ${(err as Error).message.slice(0, 160)}`);
          return;
        }
        await new Promise((r) => setTimeout(r, 1000 * attempt));
      }
    }
  });
  return counts;
}

interface Stats {
  events: number;
  cpuMicros: number;
  ready: number;
  writes: number;
  reconciles: number;
  idle: boolean;
  cached: number;
  rss: number;
  heap: number;
  external: number;
}

/**
 * The operator in a child process, so the RSS measured is the operator's alone. stats() is cheap
 * (counts) and is what the waits poll; memory() collects garbage first and reads the memory
 * figures: a poll that forced a full GC ten times a second would cost the operator more CPU than
 * its work once its cache is large, and would be counted in its CPU per event.
 */
function startOperatorProcess(kubeconfig: string): Promise<{
  stats(): Promise<Stats>;
  memory(): Promise<Stats>;
  resync(): Promise<void>;
  stop(): Promise<void>;
}> {
  const child = fork(fileURLToPath(new URL("./operator-process.ts", import.meta.url)), [], {
    env: { MALLOC_ARENA_MAX: "2", ...process.env, KUBECONFIG: kubeconfig, BENCH_NAMESPACE: ns },
    // NODE_FLAGS: V8 flags of the operator process, e.g. the chart's
    // "--max-old-space-size=192 --max-semi-space-size=2"; MALLOC_ARENA_MAX=2 is set like the chart does.
    execArgv: ["--expose-gc", ...(process.env.NODE_FLAGS ?? "").split(" ").filter(Boolean)],
  });
  let next = 1;
  let exited: Error | undefined;
  const waiting = new Map<number, { resolve: (m: unknown) => void; reject: (e: Error) => void }>();
  const call = <T>(cmd: string) =>
    new Promise<T>((resolve, reject) => {
      if (exited) return reject(exited);
      const id = next++;
      waiting.set(id, { resolve: resolve as (m: unknown) => void, reject });
      child.send({ id, cmd });
    });
  // A failed run must not leave the operator behind (it holds the bench's stdout open).
  process.on("exit", () => child.kill("SIGKILL"));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      // An operator that dies (e.g. out of heap) ends every call in flight instead of hanging it.
      exited = new Error(`operator exited (${signal ?? code})`);
      for (const w of waiting.values()) w.reject(exited);
      waiting.clear();
      reject(exited);
    });
    child.on("message", (m: { id: number }) => {
      if (m.id === 0) {
        resolve({
          stats: () => call<Stats>("stats"),
          memory: () => call<Stats>("memory"),
          resync: () => call<void>("resync"),
          stop: () => call<void>("stop"),
        });
        return;
      }
      waiting.get(m.id)?.resolve(m);
      waiting.delete(m.id);
    });
  });
}

/**
 * Polls fn until it returns true or timeoutMs passes (false then: the caller reports, never hangs);
 * every PROGRESS_MS prints what progress() says.
 */
async function until(
  what: string,
  fn: () => Promise<boolean>,
  timeoutMs: number,
  progress?: () => string,
): Promise<boolean> {
  const started = Date.now();
  let nextReport = started + PROGRESS_MS;
  while (!(await fn())) {
    const now = Date.now();
    if (now - started > timeoutMs) {
      console.log(`[!] ${what}: not reached in ${Math.round(timeoutMs / 1000)} s${progress ? ` (${progress()})` : ""}`);
      return false;
    }
    if (progress && now >= nextReport) {
      nextReport = now + PROGRESS_MS;
      console.log(
        `[..] ${what}: ${progress()} after ${Math.round((now - started) / 1000)} s, load ${load().toFixed(1)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return true;
}

type OperatorHandle = Awaited<ReturnType<typeof startOperatorProcess>>;

/** Waits until the operator has had nothing to do for 2 s (bounded; `quiet` false when it never was). */
async function quiesce(op: OperatorHandle, what: string): Promise<Stats & { quiet: boolean }> {
  let last = -1;
  let since = Date.now();
  let s: Stats | undefined;
  const quiet = await until(
    `${what}: quiet`,
    async () => {
      s = await op.stats();
      const n = s.reconciles + s.writes;
      if (n !== last || !s.idle) {
        last = n;
        since = Date.now();
      }
      return Date.now() - since > 2000;
    },
    QUIET_TIMEOUT_MS,
    () => `${s?.reconciles} reconciles, ${s?.writes} writes, queue ${s?.idle ? "empty" : "busy"}`,
  );
  // The memory figures after a full collection, once the operator is quiet.
  return { ...(await op.memory()), quiet };
}

const kube = await startKube();
let exitCode = 0;
/** The work line, printed last once the run has checked it. */
let checked = "";
try {
  const client = new Driver(kube.server, kube.dir);
  await installCrds(client);
  await seedNamespace(client, ns);
  const op = await startOperatorProcess(kube.kubeconfig);
  const base = await quiesce(op, "start");
  const loadStart = load();
  let last: Stats | undefined;
  const readyProgress = (target: number) => () =>
    `${last?.ready ?? 0}/${target} Ready, ${last?.cached ?? 0} cached, ${last?.reconciles ?? 0} reconciles`;
  const readyAtLeast = (n: number) => async () => {
    last = await op.stats();
    return last.ready >= n;
  };
  const cpuPerEvent = (a: Stats, b: Stats) => (b.cpuMicros - a.cpuMicros) / Math.max(1, b.events - a.events);
  const result: Record<string, unknown> = {
    layer: LAYER,
    nodeFlags: process.env.NODE_FLAGS ?? "",
    channels: CHANNELS,
    total: TOTAL,
    idleRssMB: Math.round(base.rss / 2 ** 20),
    idleHeapMB: Math.round(base.heap / 2 ** 20),
  };
  const report = (complete: boolean) => {
    const l = loads.length ? loads : [load()];
    result.complete = complete;
    result.load = `${Math.min(...l).toFixed(1)}–${Math.max(...l).toFixed(1)} (mean ${(l.reduce((a, b) => a + b, 0) / l.length).toFixed(1)})`;
    // One line for bench/operator/ab.sh to tabulate.
    console.log(`RESULT ${JSON.stringify(result)}`);
  };

  // (1) N AccessChannels at once → all Ready.
  const t0 = performance.now();
  const creating = createChannels(client, 0, CHANNELS);
  const allReady = await until(`${CHANNELS} Ready`, readyAtLeast(CHANNELS), READY_TIMEOUT_MS, readyProgress(CHANNELS));
  const readySeconds = (performance.now() - t0) / 1000;
  result.createFailures = (await creating).failed;
  const before = await quiesce(op, "after Ready");
  result.readySeconds = allReady ? Number(readySeconds.toFixed(1)) : null;
  result.cpuPerEventReadyMicros = Math.round(cpuPerEvent(base, before));
  if (!allReady) {
    report(false);
    throw new MissingWorkError(
      `benchmark did not do its work: ${CHANNELS} AccessChannels Ready within READY_TIMEOUT_S, saw ${before.ready}`,
    );
  }
  await expectChannelsDone(client, ns, "[1]", CHANNELS, before.ready);
  console.log(
    `[1] ${CHANNELS} AccessChannels created at once -> all Ready in ${readySeconds.toFixed(1)} s (target <= 30 s; load ${loadStart.toFixed(1)} -> ${load().toFixed(1)}); operator CPU ${((before.cpuMicros - base.cpuMicros) / 1e6).toFixed(1)} s for ${before.events - base.events} informer events = ${cpuPerEvent(base, before).toFixed(0)} µs per event`,
  );

  // (2) Steady state: a forced resync of every cached object writes nothing.
  await op.resync();
  const after = await quiesce(op, "resync");
  result.resyncWrites = after.writes - before.writes;
  // Every channel reconciled again: a resync that reached nothing would write nothing too.
  expectAtLeast(
    "[2] reconciles in the forced resync (one per AccessChannel)",
    after.reconciles - before.reconciles,
    CHANNELS,
  );
  console.log(
    `[2] steady-state resync: ${after.reconciles - before.reconciles} reconciles, ${after.writes - before.writes} API writes (target 0)`,
  );

  // (3) RSS with TOTAL AccessChannels and their TOTAL key Secrets in the cache.
  // Created at the pace the operator readies them (at most WINDOW waiting), so a starved API
  // server is not buried under a backlog of creates it then times out; at FILL_TIMEOUT_S the
  // creation stops and the memory is measured with what is there, printed as such (RESULT with
  // "complete": false), and the run fails.
  const t1 = performance.now();
  let stopFill = false;
  const created = { value: CHANNELS };
  const filling = createChannels(client, CHANNELS, TOTAL, async () => {
    while (!stopFill && created.value - (last?.ready ?? 0) >= WINDOW) await new Promise((r) => setTimeout(r, 250));
    if (!stopFill) created.value += 1;
    return !stopFill;
  });
  const filled = await until(`${TOTAL} Ready`, readyAtLeast(TOTAL), FILL_TIMEOUT_MS, readyProgress(TOTAL));
  stopFill = true;
  const fill = await filling;
  result.createFailures = (result.createFailures as number) + fill.failed;
  const full = await quiesce(op, "filled");
  result.fillSeconds = Math.round((performance.now() - t1) / 1000);
  result.cpuPerEventFillMicros = Math.round(cpuPerEvent(after, full));
  result.ready = full.ready;
  result.cached = full.cached;
  result.rssMB = Math.round(full.rss / 2 ** 20);
  result.heapMB = Math.round(full.heap / 2 ** 20);
  result.externalMB = Math.round(full.external / 2 ** 20);
  const line3 = `[3] ${full.cached} objects cached (${full.ready}/${TOTAL} AccessChannels Ready + their key Secrets + data plane) after ${result.fillSeconds} s: operator RSS ${mb(full.rss)}, heap ${mb(full.heap)}, external ${mb(full.external)} (idle with an empty cache: RSS ${mb(base.rss)}, heap ${mb(base.heap)}) (target < 200 MB); ${cpuPerEvent(after, full).toFixed(0)} µs CPU per informer event while the rest were created`;
  if (!filled || !full.quiet) {
    console.log(`${line3} (incomplete)`);
    report(false);
    throw new MissingWorkError(
      `benchmark did not do its work: ${TOTAL} AccessChannels Ready within FILL_TIMEOUT_S and the operator ` +
        `quiet after, saw ${full.ready} Ready${full.quiet ? "" : ", the operator still busy"}`,
    );
  }
  await expectChannelsDone(client, ns, "[3]", TOTAL, full.ready);
  // The cache holds each channel and its key Secret (and the Agent, data plane objects).
  expectAtLeast("[3] objects in the operator's cache", full.cached, 2 * TOTAL);
  console.log(line3);
  report(true);
  checked =
    `${TOTAL} AccessChannels Ready with their key Secrets on the API server (${CHANNELS} at once), ` +
    `${after.reconciles - before.reconciles} reconciles in the resync, ${full.cached} objects cached`;
  await op.stop();
  await client.close();
} catch (err) {
  console.log(`[!] bench failed: ${(err as Error).stack ?? err}`);
  exitCode = 1;
} finally {
  await kube.stop();
}
if (checked) workChecked(checked);
process.exit(exitCode);
