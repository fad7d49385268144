// The operator under benchmark, alone in its own process so its RSS is its own. Driven by
// bench.ts over IPC: "stats" answers counts, "resync" re-delivers every cached object.
import { createLogger, createRegistry } from "@capstan/shared";
import { loadOperatorConfig } from "../../operator/src/config.ts";
import { Operator } from "../../operator/src/manager.ts";
import { operatorKube } from "./layer.ts";

const ns = process.env.BENCH_NAMESPACE as string;
const config = loadOperatorConfig(
  {},
  {
    namespace: ns,
    watchNamespace: ns,
    leaderElection: { enabled: false },
    resyncSeconds: 0,
    ...(process.env.WORKERS ? { maxConcurrentReconciles: Number(process.env.WORKERS) } : {}),
  },
);
const op = new Operator(config, {
  ...operatorKube(process.env.KUBECONFIG as string),
  registry: createRegistry({ defaultMetrics: false }),
  logger: createLogger({ name: "bench-operator", level: "warn" }),
});
// Every informer event handled (adds, updates, deletes of any cached kind), for CPU per event.
let events = 0;
const count = () => {
  events += 1;
};
for (const inf of Object.values(op.informers)) inf.addHandler({ add: count, update: count, delete: count });
await op.start();

let forcedGcMicros = 0;

/** Counts, cheap enough to poll; with `memory`, a full collection first and the memory figures. */
function stats(memory: boolean) {
  let ready = 0;
  for (const ch of op.informers.channels.list()) {
    if (ch.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")) ready += 1;
  }
  if (memory) {
    const before = process.cpuUsage();
    global.gc?.();
    const spent = process.cpuUsage(before);
    forcedGcMicros += spent.user + spent.system;
  }
  const cpu = process.cpuUsage();
  const mem = memory ? process.memoryUsage() : { rss: 0, heapUsed: 0, external: 0 };
  return {
    events,
    // The operator's own CPU: the collections forced here for the memory figures are left out.
    cpuMicros: cpu.user + cpu.system - forcedGcMicros,
    ready,
    writes: op.http.writes,
    reconciles: Object.values(op.controllers).reduce((s, c) => s + c.reconciles, 0),
    idle: Object.values(op.controllers).every((c) => c.queue.length === 0),
    cached: op.cacheSize(),
    rss: mem.rss,
    heap: mem.heapUsed,
    external: mem.external,
  };
}

process.on("message", (msg: { id: number; cmd: string }) => {
  if (msg.cmd === "resync") for (const inf of Object.values(op.informers)) inf.resync();
  if (msg.cmd === "stop") {
    void op.stop().then(() => {
      process.send?.({ id: msg.id, stopped: true });
      process.exit(0);
    });
    return;
  }
  process.send?.({ id: msg.id, ...stats(msg.cmd === "memory") });
});
process.send?.({ id: 0, started: true });
