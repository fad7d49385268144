// Added latency and throughput of the gateway (Redis limiter on) over the fake provider, in one run:
//   1. a precise closed-loop probe (µs timing, low concurrency) straight to the provider and through
//      the gateway, alternating rounds so both see the same machine load: p50/p99 added latency;
//   2. autocannon at saturation on both: requests/s and the throughput ratio.
// Run: node bench/gateway/latency.ts   (env: BENCH_DURATION=seconds, BENCH_PROBE=requests per round,
//   BENCH_BEFORE=another checkout, e.g. main: its gateway too, probed and loaded in the same rounds;
//   BENCH_ENV / BENCH_BEFORE_ENV="K=V ...": more environment for each of the two gateways,
//   BENCH_GATEWAY_NODE_FLAGS / BENCH_BEFORE_NODE_FLAGS: their node flags)
//   --smoke: 1 s of autocannon, 50 requests per round (bench/work.ts). Every probe request must be
//   answered with a completion, the gateway must have called the provider once per request it
//   answered, and autocannon must see only 2xx answers; otherwise the run stops.
import autocannon from "autocannon";
import { startRedis } from "../../test/ground/redis.ts";
import { envPairs } from "../env.ts";
import { expectAtLeast, expectCount, expectWork, sized, workChecked } from "../work.ts";
import {
  CHAT_BODY,
  cleanup,
  cpuMs,
  expectAnswered,
  fmt,
  type Probe,
  probeLatency,
  procs,
  startFakeUpstream,
  startGatewayProcess,
  upstreamCalls,
  writeResources,
} from "./harness.ts";

const duration = Number(process.env.BENCH_DURATION ?? sized(10, 1));
const probeTotal = Number(process.env.BENCH_PROBE ?? sized(2000, 50));
const rounds = 3;

function cannon(url: string, headers: Record<string, string>) {
  return autocannon({
    url,
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: CHAT_BODY,
    connections: 32,
    duration,
  });
}

const redis = await startRedis();
try {
  const upstream = await startFakeUpstream();
  const { dir, key } = writeResources({ providerURL: upstream, qpm: 1_000_000 });
  // BENCH_ENV / BENCH_BEFORE_ENV: more environment of this tree's / the before tree's gateway
  // (bench/env.ts), and BENCH_BEFORE_NODE_FLAGS the before's node flags (this tree's:
  // BENCH_GATEWAY_NODE_FLAGS), e.g. an image's malloc or V8 settings against none, on the same code.
  const gateway = await startGatewayProcess({
    CAPSTAN_RESOURCES_DIR: dir,
    REDIS_URL: redis.url,
    ...envPairs(process.env.BENCH_ENV),
  });
  const auth = { authorization: `Bearer ${key}` };
  // The same gateway settings on another checkout (the code before a change), side by side.
  const beforeRoot = process.env.BENCH_BEFORE;
  const before = beforeRoot
    ? await startGatewayProcess(
        { CAPSTAN_RESOURCES_DIR: dir, REDIS_URL: redis.url, ...envPairs(process.env.BENCH_BEFORE_ENV) },
        beforeRoot,
        process.env.BENCH_BEFORE_NODE_FLAGS ?? "",
      )
    : undefined;
  if (before) await probeLatency(before, "/api/v1/chat/completions", auth, { total: 500, concurrency: 4 });

  // Warm both paths (JIT, connection pools, the script cache in Redis).
  await probeLatency(upstream, "/v1/chat/completions", {}, { total: 500, concurrency: 4 });
  await probeLatency(gateway, "/api/v1/chat/completions", auth, { total: 500, concurrency: 4 });

  const [fakePid, gatewayPid, beforePid] = procs.map((p) => p.child.pid as number) as [number, number, number];
  const callsBefore = await upstreamCalls(gateway);
  const direct: Probe[] = [];
  const through: Probe[] = [];
  const throughBefore: Probe[] = [];
  let fakeCpu = 0;
  let gatewayCpu = 0;
  let beforeCpu = 0;
  for (let i = 0; i < rounds; i++) {
    direct.push(await probeLatency(upstream, "/v1/chat/completions", {}, { total: probeTotal, concurrency: 1 }));
    const f0 = cpuMs(fakePid);
    const g0 = cpuMs(gatewayPid);
    through.push(await probeLatency(gateway, "/api/v1/chat/completions", auth, { total: probeTotal, concurrency: 1 }));
    fakeCpu += cpuMs(fakePid) - f0;
    gatewayCpu += cpuMs(gatewayPid) - g0;
    if (before) {
      const b0 = cpuMs(beforePid);
      throughBefore.push(
        await probeLatency(before, "/api/v1/chat/completions", auth, { total: probeTotal, concurrency: 1 }),
      );
      beforeCpu += cpuMs(beforePid) - b0;
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const d50 = median(direct.map((p) => p.p50));
  const d99 = median(direct.map((p) => p.p99));
  const g50 = median(through.map((p) => p.p50));
  const g99 = median(through.map((p) => p.p99));
  const errors = [...direct, ...through].reduce((n, p) => n + p.errors, 0);
  for (const [i, p] of direct.entries()) expectAnswered(`direct round ${i + 1}`, p, probeTotal);
  for (const [i, p] of through.entries()) expectAnswered(`gateway round ${i + 1}`, p, probeTotal);
  for (const [i, p] of throughBefore.entries()) expectAnswered(`before's gateway round ${i + 1}`, p, probeTotal);
  expectCount(
    "provider calls the gateway made for its probe rounds",
    (await upstreamCalls(gateway)) - callsBefore,
    rounds * probeTotal,
  );

  const a = await cannon(`${upstream}/v1/chat/completions`, {});
  const callsBeforeCannon = await upstreamCalls(gateway);
  const b = await cannon(`${gateway}/api/v1/chat/completions`, auth);
  const cannonCalls = (await upstreamCalls(gateway)) - callsBeforeCannon;
  const c = before ? await cannon(`${before}/api/v1/chat/completions`, auth) : undefined;
  for (const [name, r] of [["direct", a], ["gateway", b], ...(c ? [["before's gateway", c] as const] : [])] as const) {
    expectAtLeast(`2xx answers to autocannon (${name})`, r["2xx"], 1);
    expectWork(
      r.non2xx === 0 && r.errors === 0,
      `autocannon (${name}) saw ${r.non2xx} non-2xx answers and ${r.errors} errors`,
    );
  }
  // autocannon counts the answers that arrived within its duration; the requests still in flight
  // then (at most one per connection) reached the provider too.
  expectWork(
    cannonCalls >= b["2xx"] && cannonCalls <= b["2xx"] + 32,
    `provider calls the gateway made under autocannon: ${b["2xx"]} to ${b["2xx"] + 32} expected, saw ${cannonCalls}`,
  );

  const lines = [
    `gateway added latency (closed loop, 1 connection, ${rounds} rounds × ${probeTotal} requests, median of rounds)`,
    `  direct   p50 ${fmt(d50)}  p99 ${fmt(d99)}`,
    `  gateway  p50 ${fmt(g50)}  p99 ${fmt(g99)}`,
    `  added    p50 ${fmt(g50 - d50)}  p99 ${fmt(g99 - d99)}   (target p50 <= 1 ms, p99 <= 3 ms)`,
    `  non-200 answers: ${errors}`,
    `CPU per request through the gateway (load-independent): gateway ${fmt(gatewayCpu / (rounds * probeTotal))}, provider ${fmt(fakeCpu / (rounds * probeTotal))}`,
    `throughput (autocannon, 32 connections, ${duration} s each)`,
    `  direct   ${a.requests.average.toFixed(0)} req/s  p50 ${a.latency.p50} ms  p99 ${a.latency.p99} ms  non-2xx ${a.non2xx}`,
    `  gateway  ${b.requests.average.toFixed(0)} req/s  p50 ${b.latency.p50} ms  p99 ${b.latency.p99} ms  non-2xx ${b.non2xx}`,
    `  ratio    ${(b.requests.average / a.requests.average).toFixed(3)} (gateway / direct)`,
  ];
  if (before && c) {
    const m50 = median(throughBefore.map((p) => p.p50));
    const m99 = median(throughBefore.map((p) => p.p99));
    lines.push(
      `before (${beforeRoot}), same rounds:`,
      `  added    p50 ${fmt(m50 - d50)}  p99 ${fmt(m99 - d99)}`,
      `  CPU per request: gateway ${fmt(beforeCpu / (rounds * probeTotal))}`,
      `  throughput ${c.requests.average.toFixed(0)} req/s  p50 ${c.latency.p50} ms  p99 ${c.latency.p99} ms  ratio ${(c.requests.average / a.requests.average).toFixed(3)}; this tree / before ${(b.requests.average / c.requests.average).toFixed(3)}`,
    );
  }
  console.log(lines.join("\n"));
  workChecked(
    `${2 * rounds * probeTotal} probe completions and ${b["2xx"]} under load, each gateway one a provider call`,
  );
} finally {
  await cleanup();
  await redis.stop();
}
