// Added latency of an Agent with three upstreams whose first one fails (HTTP 503), once that
// upstream's breaker is open, next to the same gateway's single-upstream Agent, in one run: a
// closed-loop probe (µs timing, one connection) straight to the provider, through the
// single-upstream Agent and through the three-upstream one, alternating rounds so all three see
// the same machine load. The first upstream's breaker opens during the warm-up (5 failed calls)
// and stays open for the run (breakerOpenSeconds 3600): every probe request skips it without a
// call. Run: node bench/gateway/fallback.ts   (env: BENCH_PROBE=requests per round; --smoke: 50)
// Every probe request must be answered with a completion, and the gateway's fallback counter must
// show one circuit_open skip per request of the three-upstream rounds; otherwise the run stops.
import { startRedis } from "../../test/ground/redis.ts";
import { expectCount, sized, workChecked } from "../work.ts";
import {
  cleanup,
  expectAnswered,
  fmt,
  internalUrlOf,
  type Probe,
  probeLatency,
  startFakeUpstream,
  startGatewayProcess,
  writeResources,
} from "./harness.ts";

const probeTotal = Number(process.env.BENCH_PROBE ?? sized(2000, 50));
const rounds = 3;

async function circuitSkips(url: string): Promise<number> {
  const text = await (await fetch(`${internalUrlOf(url)}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("capstan_gateway_upstream_fallbacks_total{") && l.includes('reason="circuit_open"'))
    .reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
}

const redis = await startRedis();
try {
  const upstream = await startFakeUpstream();
  const single = writeResources({ providerURL: upstream, qpm: 1_000_000 });
  const triple = writeResources({
    qpm: 1_000_000,
    agentSpec: [
      "  routing: {breakerFailures: 5, breakerOpenSeconds: 3600}",
      "  upstreams:",
      `    - {name: failing, baseURL: ${upstream}/v1, model: "status:503"}`,
      `    - {name: second, baseURL: ${upstream}/v1, model: echo}`,
      `    - {name: third, baseURL: ${upstream}/v1, model: echo}`,
      "",
    ].join("\n"),
  });
  const gateway1 = await startGatewayProcess({ CAPSTAN_RESOURCES_DIR: single.dir, REDIS_URL: redis.url });
  const gateway3 = await startGatewayProcess({ CAPSTAN_RESOURCES_DIR: triple.dir, REDIS_URL: redis.url });
  const auth1 = { authorization: `Bearer ${single.key}` };
  const auth3 = { authorization: `Bearer ${triple.key}` };
  // Warm every path; the three-upstream Agent's first upstream fails 5 times and its breaker opens.
  await probeLatency(upstream, "/v1/chat/completions", {}, { total: 500, concurrency: 4 });
  await probeLatency(gateway1, "/api/v1/chat/completions", auth1, { total: 500, concurrency: 4 });
  await probeLatency(gateway3, "/api/v1/chat/completions", auth3, { total: 500, concurrency: 4 });
  const skipsBefore = await circuitSkips(gateway3);

  const direct: Probe[] = [];
  const one: Probe[] = [];
  const three: Probe[] = [];
  for (let i = 0; i < rounds; i++) {
    direct.push(await probeLatency(upstream, "/v1/chat/completions", {}, { total: probeTotal, concurrency: 1 }));
    one.push(await probeLatency(gateway1, "/api/v1/chat/completions", auth1, { total: probeTotal, concurrency: 1 }));
    three.push(await probeLatency(gateway3, "/api/v1/chat/completions", auth3, { total: probeTotal, concurrency: 1 }));
  }
  for (const [name, ps] of [
    ["direct", direct],
    ["one upstream", one],
    ["three upstreams", three],
  ] as const)
    for (const [i, p] of ps.entries()) expectAnswered(`${name} round ${i + 1}`, p, probeTotal);
  expectCount(
    "first upstream skipped by its open breaker (capstan_gateway_upstream_fallbacks_total{reason=circuit_open})",
    (await circuitSkips(gateway3)) - skipsBefore,
    rounds * probeTotal,
  );
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const d50 = median(direct.map((p) => p.p50));
  const d99 = median(direct.map((p) => p.p99));
  const lines = [
    `added latency, closed loop, 1 connection, ${rounds} rounds × ${probeTotal} requests, median of rounds`,
    `  direct            p50 ${fmt(d50)}  p99 ${fmt(d99)}`,
  ];
  for (const [name, ps] of [
    ["one upstream", one],
    ["three, first open", three],
  ] as const) {
    const p50 = median(ps.map((p) => p.p50));
    const p99 = median(ps.map((p) => p.p99));
    lines.push(
      `  ${name.padEnd(18)}p50 ${fmt(p50)}  p99 ${fmt(p99)}   added p50 ${fmt(p50 - d50)}  p99 ${fmt(p99 - d99)}`,
    );
  }
  lines.push("  (target: three upstreams with the first's breaker open, added p50 < 2 ms)");
  console.log(lines.join("\n"));
  workChecked(`${3 * rounds * probeTotal} probe completions, ${rounds * probeTotal} breaker skips`);
} finally {
  await cleanup();
  await redis.stop();
}
