// Operator benchmark on a private etcd + kube-apiserver: (1) N AccessChannels created at once,
// time until all are Ready; (2) API writes during a forced resync of every cached object in
// steady state; (3) RSS of the process with TOTAL AccessChannels (+ their key Secrets) cached.
//   node bench/operator/bench.ts            (CHANNELS=1000 TOTAL=10000 by default)
// bench/operator/ab.sh runs it on this tree and on the tree before client-node, with the same flags.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createRegistry } from "@capstan/shared";
import { allCrds } from "@capstan/shared/api";
import type { KubeHttp } from "@capstan/shared/kube";
import { startKube } from "../../test/ground/kube.ts";
import { driverClient, LAYER } from "./layer.ts";

const CHANNELS = Number(process.env.CHANNELS ?? 1000);
const TOTAL = Number(process.env.TOTAL ?? 10_000);
const ns = "bench";
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MB`;

async function pool<T>(items: T[], width: number, fn: (t: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (i < items.length) await fn(items[i++] as T);
    }),
  );
}

async function createChannels(client: KubeHttp, from: number, to: number): Promise<void> {
  const names = Array.from({ length: to - from }, (_, k) => `ch-${from + k}`);
  await pool(names, 32, async (name) => {
    await client.json(`/apis/capstan.dev/v1alpha1/namespaces/${ns}/accesschannels`, {
      method: "POST",
      body: {
        apiVersion: "capstan.dev/v1alpha1",
        kind: "AccessChannel",
        metadata: { name, namespace: ns },
        spec: { channelName: name, agentRef: { name: "agent" } },
      },
    });
  });
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

/** The operator in a child process, so the RSS measured is the operator's alone. */
function startOperatorProcess(
  kubeconfig: string,
): Promise<{ stats(): Promise<Stats>; resync(): Promise<void>; stop(): Promise<void> }> {
  const child = fork(fileURLToPath(new URL("./operator-process.ts", import.meta.url)), [], {
    env: { MALLOC_ARENA_MAX: "2", ...process.env, KUBECONFIG: kubeconfig, BENCH_NAMESPACE: ns },
    // NODE_FLAGS: V8 flags of the operator process, e.g. the chart's
    // "--max-old-space-size=192 --max-semi-space-size=2"; MALLOC_ARENA_MAX=2 is set like the chart does.
    execArgv: ["--expose-gc", ...(process.env.NODE_FLAGS ?? "").split(" ").filter(Boolean)],
  });
  let next = 1;
  const waiting = new Map<number, (m: unknown) => void>();
  const call = <T>(cmd: string) =>
    new Promise<T>((resolve) => {
      const id = next++;
      waiting.set(id, resolve as (m: unknown) => void);
      child.send({ id, cmd });
    });
  // A failed run must not leave the operator behind (it holds the bench's stdout open).
  process.on("exit", () => child.kill("SIGKILL"));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code) => code && reject(new Error(`operator exited ${code}`)));
    child.on("message", (m: { id: number }) => {
      if (m.id === 0) {
        resolve({
          stats: () => call<Stats>("stats"),
          resync: () => call<void>("resync"),
          stop: () => call<void>("stop"),
        });
        return;
      }
      waiting.get(m.id)?.(m);
      waiting.delete(m.id);
    });
  });
}

async function until(what: string, fn: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

type OperatorHandle = Awaited<ReturnType<typeof startOperatorProcess>>;

async function quiesce(op: OperatorHandle): Promise<Stats> {
  let last = -1;
  let since = Date.now();
  let s: Stats | undefined;
  await until(
    "quiet",
    async () => {
      s = await op.stats();
      const n = s.reconciles + s.writes;
      if (n !== last || !s.idle) {
        last = n;
        since = Date.now();
      }
      return Date.now() - since > 2000;
    },
    900_000,
  );
  return s as Stats;
}

async function installCrds(client: KubeHttp): Promise<void> {
  const base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  for (const { crd } of allCrds()) await client.json(base, { method: "POST", body: crd });
  for (const { crd } of allCrds()) {
    const name = (crd.metadata as { name: string }).name;
    for (;;) {
      const got = await client.json<{ status?: { conditions?: { type: string; status: string }[] } }>(
        `${base}/${name}`,
      );
      if (got.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function ensureNamespace(client: KubeHttp, name: string): Promise<void> {
  await client.json("/api/v1/namespaces", {
    method: "POST",
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
  });
}

const kube = await startKube();
try {
  // A pooled client (keep-alive), so creating the objects is not the bottleneck being measured.
  const client = driverClient(kube.kubeconfig, createRegistry({ defaultMetrics: false }));
  await installCrds(client);
  await ensureNamespace(client, ns);
  await client.json(`/apis/capstan.dev/v1alpha1/namespaces/${ns}/agents`, {
    method: "POST",
    body: {
      apiVersion: "capstan.dev/v1alpha1",
      kind: "Agent",
      metadata: { name: "agent", namespace: ns },
      spec: { provider: { baseURL: "https://llm.example/v1", model: "m" } },
    },
  });
  const op = await startOperatorProcess(kube.kubeconfig);
  const base = await quiesce(op);

  // (1) N AccessChannels at once → all Ready.
  const t0 = performance.now();
  const creating = createChannels(client, 0, CHANNELS);
  await until(`${CHANNELS} Ready`, async () => (await op.stats()).ready >= CHANNELS, 600_000);
  const readySeconds = (performance.now() - t0) / 1000;
  await creating;
  const before = await quiesce(op);
  const cpuPerEvent = (a: Stats, b: Stats) => (b.cpuMicros - a.cpuMicros) / Math.max(1, b.events - a.events);
  console.log(
    `[1] ${CHANNELS} AccessChannels created at once -> all Ready in ${readySeconds.toFixed(1)} s (target <= 30 s); operator CPU ${((before.cpuMicros - base.cpuMicros) / 1e6).toFixed(1)} s for ${before.events - base.events} informer events = ${cpuPerEvent(base, before).toFixed(0)} µs per event`,
  );

  // (2) Steady state: a forced resync of every cached object writes nothing.
  await op.resync();
  const after = await quiesce(op);
  console.log(
    `[2] steady-state resync: ${after.reconciles - before.reconciles} reconciles, ${after.writes - before.writes} API writes (target 0)`,
  );

  // (3) RSS with TOTAL AccessChannels and their TOTAL key Secrets in the cache.
  await createChannels(client, CHANNELS, TOTAL);
  await until(`${TOTAL} Ready`, async () => (await op.stats()).ready >= TOTAL, 1_800_000);
  const full = await quiesce(op);
  console.log(
    `[3] ${full.cached} objects cached (${TOTAL} AccessChannels + their key Secrets + data plane): operator RSS ${mb(full.rss)}, heap ${mb(full.heap)}, external ${mb(full.external)} (idle with an empty cache: RSS ${mb(base.rss)}, heap ${mb(base.heap)}) (target < 200 MB); ${cpuPerEvent(after, full).toFixed(0)} µs CPU per informer event while the rest were created`,
  );
  // One line for bench/operator/ab.sh to tabulate.
  console.log(
    `RESULT ${JSON.stringify({
      layer: LAYER,
      nodeFlags: process.env.NODE_FLAGS ?? "",
      readySeconds: Number(readySeconds.toFixed(1)),
      cpuPerEventReadyMicros: Math.round(cpuPerEvent(base, before)),
      cpuPerEventFillMicros: Math.round(cpuPerEvent(after, full)),
      resyncWrites: after.writes - before.writes,
      cached: full.cached,
      rssMB: Math.round(full.rss / 2 ** 20),
      heapMB: Math.round(full.heap / 2 ** 20),
      idleRssMB: Math.round(base.rss / 2 ** 20),
      idleHeapMB: Math.round(base.heap / 2 ** 20),
    })}`,
  );
  await op.stop();
} finally {
  await kube.stop();
}
