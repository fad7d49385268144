// What tracing costs the gateway, side by side in one run: the same build as several gateway
// processes on one Redis (limiter on) and one fake provider, each with different OTEL_* settings,
// loaded in turn with autocannon in interleaved rounds (A B C A B C ...) so every configuration
// sees the same machine load. A minimal OTLP/HTTP sink on loopback receives what the exporting
// configurations send (it answers 200 and counts spans' requests and bytes).
// Run: node bench/gateway/tracing.ts   (--smoke: 1 round of 1 s, 50 warm-up requests, and
//   every-request sampling added; the run stops unless every answer is a 2xx the provider was
//   called for, and the sampled configuration's spans reach the sink)
//   env: BENCH_DURATION (s per autocannon run, default 10), BENCH_ROUNDS (default 6),
//        BENCH_CONNECTIONS (default 32), BENCH_WARMUP (requests per process first, default 20,000), BENCH_CONFIGS (comma-separated names below, default
//        off,none,none-traceparent,otlp-1pct), BENCH_BEFORE (another checkout: adds before-off,
//        before-none, before-otlp-0pct, before-otlp-1pct and before-otlp-100pct, its gateway with the same settings),
//        BENCH_GATEWAY_CPUS (the gateways on those CPUs only, harness.ts; run the bench itself
//        under `taskset -c 0` so that the load generator, the fake provider and Redis keep off them:
//        the gateway is then the only bottleneck and its throughput follows its CPU per request),
//        BENCH_SIMULTANEOUS=1 (every configuration loaded at once in each round, sharing those
//        CPUs: the machine's speed changes between turns no longer separate them; a name
//        `<config>#2` adds another process of the same configuration, to see how far two
//        processes of one build differ)
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import autocannon from "autocannon";
import { startRedis } from "../../test/ground/redis.ts";
import { expectAtLeast, expectCount, expectWork, SMOKE, sized, workChecked } from "../work.ts";
import {
  CHAT_BODY,
  cleanup,
  cpuMs,
  expectAnswered,
  probeLatency,
  procs,
  startFakeUpstream,
  startGatewayProcess,
  threadCpuMs,
  upstreamCalls,
  writeResources,
} from "./harness.ts";

const duration = Number(process.env.BENCH_DURATION ?? sized(10, 1));
const rounds = Number(process.env.BENCH_ROUNDS ?? sized(6, 1));
const warmup = Number(process.env.BENCH_WARMUP ?? sized(20_000, 50));
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const SIMULTANEOUS = process.env.BENCH_SIMULTANEOUS === "1";

interface Config {
  /** Another checkout whose gateway runs instead of this tree's (BENCH_BEFORE: the code before a change). */
  root?: string;
  /** The gateway's OTEL_* environment (the sink's URL is filled in for `SINK`). */
  env: Record<string, string>;
  /** V8 and node flags of this configuration's gateway (added to BENCH_GATEWAY_NODE_FLAGS). */
  nodeFlags?: string;
  /** Requests carry a caller's sampled `traceparent` (an ingress or a traced client in front). */
  traceparent?: boolean;
  what: string;
}

const SINK = "$SINK";
const CONFIGS: Record<string, Config> = {
  off: { env: { OTEL_SDK_DISABLED: "true" }, what: "OTEL_SDK_DISABLED=true (baseline)" },
  none: { env: {}, what: "tracing on, no exporter (the default)" },
  "none-traceparent": {
    env: {},
    traceparent: true,
    what: "tracing on, no exporter, every request with a caller's traceparent (propagated)",
  },
  "otlp-1pct": {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: SINK },
    what: "OTLP exporter, default sampler (parentbased_traceidratio 0.01)",
  },
  "otlp-0pct": {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: SINK, OTEL_TRACES_SAMPLER_ARG: "0" },
    what: "OTLP exporter, no new trace sampled (what being ready to trace costs)",
  },
  "otlp-0.1pct": {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: SINK, OTEL_TRACES_SAMPLER_ARG: "0.001" },
    what: "OTLP exporter, 0.1 % of new traces sampled",
  },
  "otlp-10pct": {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: SINK, OTEL_TRACES_SAMPLER_ARG: "0.1" },
    what: "OTLP exporter, 10 % of new traces sampled",
  },
  "otlp-100pct": {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: SINK, OTEL_TRACES_SAMPLER: "parentbased_always_on" },
    what: "OTLP exporter, every request sampled",
  },
};
// The same settings on another checkout (e.g. BENCH_BEFORE=/path/to/main with its node_modules):
// before-off, before-none, before-otlp-0pct, before-otlp-1pct, before-otlp-100pct.
if (process.env.BENCH_BEFORE) {
  for (const name of ["off", "none", "otlp-0pct", "otlp-1pct", "otlp-100pct"]) {
    const { env, what } = CONFIGS[name] as Config;
    CONFIGS[`before-${name}`] = { env, root: process.env.BENCH_BEFORE, what: `${process.env.BENCH_BEFORE}: ${what}` };
  }
}
CONFIGS["otlp-0pct-bare"] = {
  env: { OTEL_EXPORTER_OTLP_ENDPOINT: SINK, OTEL_TRACES_SAMPLER_ARG: "0", OTEL_NODE_ENABLED_INSTRUMENTATIONS: "-" },
  what: "as otlp-0pct, no instrumentation (the SDK, the door and the server-span hook only)",
};
CONFIGS["otlp-1pct-bare"] = {
  env: { OTEL_EXPORTER_OTLP_ENDPOINT: SINK, OTEL_NODE_ENABLED_INSTRUMENTATIONS: "-" },
  what: "as otlp-1pct, no instrumentation (the sampled requests' server and gateway spans only)",
};
CONFIGS["otlp-1pct-json"] = {
  env: { OTEL_EXPORTER_OTLP_ENDPOINT: SINK, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" },
  what: "as otlp-1pct, spans exported as OTLP/JSON instead of protobuf",
};
// V8's tiers: `<config>-nomaglev` without the mid-tier compiler (is a configuration's cost the
// JIT's, code running in a lower tier?).
for (const base of ["off", "otlp-0pct", "otlp-1pct"]) {
  const c = CONFIGS[base] as Config;
  CONFIGS[`${base}-nomaglev`] = { ...c, nodeFlags: "--no-maglev", what: `${c.what}, node --no-maglev` };
}
// Per-instrumentation cost: `<config>-no-<instrumentation>` is <config> with that one left out.
for (const base of ["none", "none-traceparent", "otlp-0pct", "otlp-1pct", "otlp-100pct"]) {
  for (const name of ["http", "undici", "ioredis"]) {
    const { env, traceparent, what } = CONFIGS[base] as Config;
    CONFIGS[`${base}-no-${name}`] = {
      env: { ...env, OTEL_NODE_DISABLED_INSTRUMENTATIONS: name },
      traceparent,
      what: `${what}, without the ${name} instrumentation`,
    };
  }
}

// The smoke mode adds every-request sampling, so that the sink must see spans.
const chosen = (
  process.env.BENCH_CONFIGS ?? sized("off,none,none-traceparent,otlp-1pct", "off,none,otlp-1pct,otlp-100pct")
)
  .split(",")
  .map((s) => s.trim());
for (const name of chosen)
  if (!configOf(name)) throw new Error(`unknown config ${name}; known: ${Object.keys(CONFIGS)}`);

/** A configuration by name; `<name>#<n>` is another process of the same configuration. */
function configOf(name: string): Config | undefined {
  return CONFIGS[name.split("#")[0] as string];
}

/** The OTLP receiver: answers every export with 200 (an empty ExportTraceServiceResponse). */
const sinkStats = { requests: 0, bytes: 0 };
const sink = createServer((req, res) => {
  sinkStats.requests++;
  req.on("data", (b: Buffer) => {
    sinkStats.bytes += b.length;
  });
  req.on("end", () => res.writeHead(200, { "content-type": req.headers["content-type"] ?? "" }).end());
});
await new Promise<void>((r) => sink.listen(0, "127.0.0.1", r));
const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;

interface Run {
  round: number;
  requests: number;
  seconds: number;
  rps: number;
  cpuPerRequest: number;
  /** Of cpuPerRequest, the part off the main thread (GC and compiler helpers, libuv's pool). */
  otherThreadsPerRequest: number;
  p50: number;
  p99: number;
  non2xx: number;
}

const redis = await startRedis();
try {
  const upstream = await startFakeUpstream();
  const { dir, key } = writeResources({ providerURL: upstream, qpm: 1_000_000 });
  const gateways: { name: string; url: string; pid: number; runs: Run[] }[] = [];
  for (const name of chosen) {
    const config = configOf(name) as Config;
    const otel = Object.fromEntries(Object.entries(config.env).map(([k, v]) => [k, v === SINK ? sinkUrl : v]));
    const url = await startGatewayProcess(
      { CAPSTAN_RESOURCES_DIR: dir, REDIS_URL: redis.url, OTEL_SDK_DISABLED: "", ...otel },
      config.root,
      [process.env.BENCH_GATEWAY_NODE_FLAGS ?? "", config.nodeFlags ?? ""].join(" "),
    );
    gateways.push({ name, url, pid: procs.at(-1)?.child.pid as number, runs: [] });
  }
  const headersOf = (name: string): Record<string, string> => ({
    "content-type": "application/json",
    authorization: `Bearer ${key}`,
    ...(configOf(name)?.traceparent ? { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" } : {}),
  });
  // Warm every process (JIT, connection pools, Redis' script cache). 20,000 requests, so that a
  // 1 % sampler's span path has run ~200 times and is compiled like a long-lived process's: after
  // 2,000 (20 sampled) the 1 % configuration measured 12–14 µs a request over the 0 % one, after
  // 30,000 about 6 µs (docs/benchmarks.md).
  for (const g of gateways) {
    const p = await probeLatency(g.url, "/api/v1/chat/completions", headersOf(g.name), {
      total: warmup,
      concurrency: 8,
    });
    expectAnswered(`${g.name} warm-up`, p, warmup);
  }
  const started = new Date();
  const load0 = (await import("node:os")).loadavg()[0] as number;
  /** One autocannon run against one gateway, its CPU read from /proc around it. */
  const measure = async (g: (typeof gateways)[number], round: number) => {
    const cpu0 = cpuMs(g.pid);
    const threads0 = threadCpuMs(g.pid);
    const calls0 = await upstreamCalls(g.url);
    const r = await autocannon({
      url: `${g.url}/api/v1/chat/completions`,
      method: "POST",
      headers: headersOf(g.name),
      body: CHAT_BODY,
      connections,
      duration,
    });
    const cpu = cpuMs(g.pid) - cpu0;
    const threads1 = threadCpuMs(g.pid);
    // The work: only 2xx answers, each a provider call the gateway made for it.
    expectCount(`${g.name} round ${round + 1}: answers that were not 2xx`, r.non2xx + r.errors, 0);
    expectAtLeast(`${g.name} round ${round + 1}: answers`, r["2xx"], 1);
    expectWork(
      (await upstreamCalls(g.url)) - calls0 >= r["2xx"],
      `${g.name} round ${round + 1}: a provider call for each of its ${r["2xx"]} answers`,
    );
    g.runs.push({
      round,
      requests: r.requests.total,
      seconds: r.duration,
      rps: r.requests.average,
      cpuPerRequest: cpu / Math.max(1, r.requests.total),
      otherThreadsPerRequest: (threads1.other - threads0.other) / Math.max(1, r.requests.total),
      p50: r.latency.p50,
      p99: r.latency.p99,
      non2xx: r.non2xx + r.errors,
    });
    const cpuPerRequest = (g.runs.at(-1) as Run).cpuPerRequest;
    console.error(
      `[round ${round + 1}] ${g.name}: ${r.requests.average.toFixed(0)} req/s, ${cpuPerRequest.toFixed(3)} ms CPU/req`,
    );
  };
  for (let round = 0; round < rounds; round++) {
    // A B C, B C A, C A B, ...: no configuration always runs right after the same other one.
    const order = gateways.map((_, i) => gateways[(i + round) % gateways.length] as (typeof gateways)[number]);
    // BENCH_SIMULTANEOUS: every configuration loaded at once, so each round measures them all in
    // the same seconds (sharing the gateways' CPU) and a change in the machine's speed between
    // one configuration's turn and the next no longer shows as a difference between them.
    if (SIMULTANEOUS) await Promise.all(order.map((g) => measure(g, round)));
    else for (const g of order) await measure(g, round);
  }
  const load1 = (await import("node:os")).loadavg()[0] as number;
  const base = gateways.find((g) => g.name === "off");
  const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
  const median = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  };
  const range = (xs: number[], digits = 0) => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;
  /** Requests per second over all rounds of a configuration. */
  const overall = (runs: Run[]) => sum(runs.map((r) => r.requests)) / sum(runs.map((r) => r.seconds));
  const lines = [
    `gateway tracing cost, ${started.toISOString()}: ${gateways.length} configurations × ${rounds} interleaved rounds,`,
    `autocannon ${connections} connections × ${duration} s, Redis limiter on, fake provider on loopback; load average ${load0.toFixed(1)} → ${load1.toFixed(1)}`,
    "  throughput: range of the rounds and over all rounds; vs off: median and range of each round's ratio to the",
    "  baseline's run of the same round, and the ratio over all rounds; CPU-bound: the baseline's CPU per request over this",
    "  configuration's, each round (the throughput kept when CPU is the limit); CPU: the gateway process's ms per request over all rounds",
  ];
  for (const g of gateways) {
    const rps = g.runs.map((r) => r.rps);
    const perRequest = (of: (r: Run) => number) =>
      sum(g.runs.map((r) => of(r) * r.requests)) / sum(g.runs.map((r) => r.requests));
    const cpu = perRequest((r) => r.cpuPerRequest);
    const offMain = perRequest((r) => r.otherThreadsPerRequest);
    let vs = "";
    if (base) {
      const ratios = g.runs.map((r) => r.rps / (base.runs.find((b) => b.round === r.round)?.rps ?? Number.NaN));
      // CPU-bound, a process serves 1/CPU-per-request requests per CPU second: the ratio of the
      // baseline's CPU per request to this one's is the throughput it keeps, and unlike req/s it
      // hardly moves with the machine's other load (each round measures both processes alike).
      const cpuRatios = g.runs.map(
        (r) => (base.runs.find((b) => b.round === r.round)?.cpuPerRequest ?? Number.NaN) / r.cpuPerRequest,
      );
      vs =
        `  vs off: median ${median(ratios).toFixed(3)} (${range(ratios, 3)}), overall ${(overall(g.runs) / overall(base.runs)).toFixed(3)}` +
        `; CPU-bound ${median(cpuRatios).toFixed(3)} (median of rounds, ${range(cpuRatios, 3)})`;
    }
    lines.push(
      `  ${g.name.padEnd(18)} ${range(rps)} req/s, overall ${overall(g.runs).toFixed(0)}${vs}  CPU ${cpu.toFixed(3)} ms/req (${offMain.toFixed(3)} off the main thread)` +
        `  p50 ${range(g.runs.map((r) => r.p50))} ms  p99 ${range(g.runs.map((r) => r.p99))} ms  errors ${sum(g.runs.map((r) => r.non2xx))}`,
    );
    lines.push(`  ${"".padEnd(18)} ${configOf(g.name)?.what}`);
  }
  lines.push(`  OTLP sink: ${sinkStats.requests} export requests, ${(sinkStats.bytes / 1024).toFixed(0)} KiB`);
  console.log(lines.join("\n"));
  // Every request sampled must reach the sink (the batch processor sends within its 5 s delay).
  if (chosen.includes("otlp-100pct")) {
    for (let i = 0; i < 100 && sinkStats.requests === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expectAtLeast("OTLP exports from the every-request configuration", sinkStats.requests, 1);
  }
  workChecked(
    `${gateways.length} configurations × ${rounds} rounds, only 2xx answers, each a provider call${SMOKE ? " (smoke)" : ""}`,
  );
} finally {
  await cleanup();
  await redis.stop();
  sink.close();
}
