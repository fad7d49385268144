// CPU profile of the gateway process on the benchmark's request (non-stream, LLM agent, Redis
// limiter on): starts the same processes as latency.ts, runs the gateway with --cpu-prof, sends
// BENCH_PROBE requests (default 5000, closed loop, BENCH_CONCURRENCY=1) and prints the CPU per
// request and where it went (self time by function and by package).
// Run: node bench/gateway/profile.ts   (env: BENCH_PROFILE_DIR, default a temp folder)
//   --smoke: 100 requests (bench/work.ts). Every request must be answered with a completion that
//   the provider was called for, and the profile must hold samples of the gateway's own code.
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startRedis } from "../../test/ground/redis.ts";
import { expectAtLeast, expectCount, sized, workChecked } from "../work.ts";
import {
  cleanup,
  cpuMs,
  expectAnswered,
  fmt,
  probeLatency,
  procs,
  startFakeUpstream,
  startGatewayProcess,
  upstreamCalls,
  writeResources,
} from "./harness.ts";

const total = Number(process.env.BENCH_PROBE ?? sized(5000, 100));
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 1);
const profDir = process.env.BENCH_PROFILE_DIR ?? mkdtempSync(join(tmpdir(), "gw-prof-"));

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** Self and inclusive time of the samples taken in [from, to] (µs on the monotonic clock). */
function summarise(file: string, from: number, to: number): { gatewayFunctions: number } {
  const prof = JSON.parse(readFileSync(file, "utf8")) as {
    nodes: Node[];
    samples: number[];
    timeDeltas: number[];
    startTime: number;
  };
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  let t = prof.startTime;
  prof.samples.forEach((id, i) => {
    const dt = prof.timeDeltas[i] ?? 0;
    t += dt;
    if (t >= from && t <= to) self.set(id, (self.get(id) ?? 0) + dt);
  });
  // Inclusive time per function (each function counted once per stack).
  const incl = new Map<string, number>();
  for (const [id, us] of self) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const { functionName, url, lineNumber } = (byId.get(cur) as Node).callFrame;
      const short = url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*\/work\/main\//, "");
      const key = `${functionName || "(anon)"} ${short}:${lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      incl.set(key, (incl.get(key) ?? 0) + us);
    }
  }
  const fn = new Map<string, number>();
  const pkg = new Map<string, number>();
  let all = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const n = byId.get(id) as Node;
    const { functionName, url, lineNumber } = n.callFrame;
    if (functionName === "(idle)" || functionName === "(program)") {
      if (functionName === "(idle)") idle += us;
    }
    all += us;
    const short = url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*\/work\/main\//, "");
    const key = `${functionName || "(anon)"} ${short}:${lineNumber + 1}`;
    fn.set(key, (fn.get(key) ?? 0) + us);
    const p = url.includes("node_modules/")
      ? (url.split("node_modules/")[1] ?? "")
          .split("/")
          .slice(0, url.includes("node_modules/@") ? 2 : 1)
          .join("/")
      : url.startsWith("node:")
        ? "node:internal"
        : url === ""
          ? functionName
          : url
              .replace(/^file:\/\/.*\/work\/main\//, "")
              .split("/")
              .slice(0, 3)
              .join("/");
    pkg.set(p, (pkg.get(p) ?? 0) + us);
  }
  const busy = all - idle;
  const top = (m: Map<string, number>, k: number) =>
    [...m]
      .filter(([name]) => !name.startsWith("(idle)"))
      .sort((a, b) => b[1] - a[1])
      .slice(0, k)
      .map(([name, us]) => `  ${((100 * us) / busy).toFixed(1).padStart(5)}%  ${name}`)
      .join("\n");
  console.log(`profile ${file}: busy ${(busy / 1000).toFixed(0)} ms of ${(all / 1000).toFixed(0)} ms sampled`);
  console.log(`self time by package:\n${top(pkg, 25)}`);
  console.log(`self time by function:\n${top(fn, 40)}`);
  console.log(`inclusive time by function:\n${top(incl, 70)}`);
  const gatewayCode = [...fn].filter(([name]) => name.includes("services/gateway/src/")).length;
  return { gatewayFunctions: gatewayCode };
}

let window: [number, number] = [0, Number.MAX_SAFE_INTEGER];
const redis = await startRedis();
try {
  const upstream = await startFakeUpstream();
  const { dir, key } = writeResources({ providerURL: upstream, qpm: 1_000_000 });
  const gateway = await startGatewayProcess({
    CAPSTAN_RESOURCES_DIR: dir,
    REDIS_URL: redis.url,
    NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profDir} --cpu-prof-interval=200`,
  });
  const auth = { authorization: `Bearer ${key}` };
  await probeLatency(gateway, "/api/v1/chat/completions", auth, { total: 1000, concurrency });
  const [fakePid, gatewayPid] = procs.map((p) => p.child.pid as number) as [number, number];
  const from = Number(process.hrtime.bigint() / 1000n);
  const g0 = cpuMs(gatewayPid);
  const f0 = cpuMs(fakePid);
  const calls0 = await upstreamCalls(gateway);
  const p = await probeLatency(gateway, "/api/v1/chat/completions", auth, { total, concurrency });
  expectAnswered("profiled requests", p, total);
  expectCount("provider calls for the profiled requests", (await upstreamCalls(gateway)) - calls0, total);
  window = [from, Number(process.hrtime.bigint() / 1000n)];
  console.log(
    `load ${readFileSync("/proc/loadavg", "utf8").trim()}\n${total} requests, concurrency ${concurrency}: p50 ${fmt(p.p50)} p99 ${fmt(p.p99)}, errors ${p.errors}; CPU per request: gateway ${fmt((cpuMs(gatewayPid) - g0) / total)}, provider ${fmt((cpuMs(fakePid) - f0) / total)}`,
  );
} finally {
  await cleanup();
  await redis.stop();
}
const files = readdirSync(profDir).filter((f) => f.endsWith(".cpuprofile"));
expectAtLeast(`CPU profiles written to ${profDir}`, files.length, 1);
const summaries = files.map((f) => summarise(join(profDir, f), ...window));
expectAtLeast(
  "functions of services/gateway/src sampled in the request window",
  Math.max(...summaries.map((x) => x.gatewayFunctions)),
  1,
);
workChecked(`${total} completions profiled; ${files.length} profile(s) with the gateway's own code sampled`);
