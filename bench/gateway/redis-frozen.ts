// Latency of chat requests while Redis is frozen (SIGSTOP: connections open, no answers), against
// the same gateway with Redis healthy: before the breaker opens, the first requests wait out the
// limiter's Redis timeout; once it is open, no request waits on Redis. One gateway process as
// deployed (src/main.ts, default breaker settings), the offline agent, a QPM too high to bind.
// Run: node bench/gateway/redis-frozen.ts   (env: BENCH_REQUESTS, BENCH_CONCURRENCY)
//   --smoke: 100 requests per phase (bench/work.ts). Every request of both phases must be answered
//   with a completion, the breaker must have opened, and the frozen phase's decisions must all
//   have been made without Redis.
import { startRedis } from "../../test/ground/redis.ts";
import { expectAtLeast, expectWork, sized, workChecked } from "../work.ts";
import {
  CHAT_BODY,
  cleanup,
  expectAnswered,
  internalUrlOf,
  type Probe,
  probeLatency,
  startGatewayProcess,
  writeResources,
} from "./harness.ts";

const total = Number(process.env.BENCH_REQUESTS ?? sized(2000, 100));
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);

async function metric(url: string, name: string, label: string): Promise<number> {
  const text = await (await fetch(`${internalUrlOf(url)}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(label));
  return Number(line?.split(" ").at(-1) ?? 0);
}

const redis = await startRedis();
try {
  const { dir, key } = writeResources({ qpm: 1_000_000 });
  const url = await startGatewayProcess({ CAPSTAN_RESOURCES_DIR: dir, REDIS_URL: redis.url });
  const headers = { authorization: `Bearer ${key}` };
  await probeLatency(url, "/api/v1/chat/completions", headers, { total: 200, concurrency }); // warm-up
  const healthy = await probeLatency(url, "/api/v1/chat/completions", headers, { total, concurrency });

  redis.freeze();
  // The requests that meet the frozen Redis before the breaker opens.
  const opening: number[] = [];
  const t0 = performance.now();
  while ((await metric(url, "capstan_gateway_redis_breaker_state", 'state="closed"')) === 1) {
    const batch = await Promise.all(
      Array.from({ length: concurrency }, async () => {
        const s = performance.now();
        const res = await fetch(`${url}/api/v1/chat/completions`, {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: CHAT_BODY,
        });
        await res.arrayBuffer();
        return performance.now() - s;
      }),
    );
    opening.push(...batch);
  }
  const openedAfterMs = performance.now() - t0;
  const frozen = await probeLatency(url, "/api/v1/chat/completions", headers, { total, concurrency });
  const circuitOpen = await metric(url, "capstan_gateway_limiter_backend_errors_total", 'reason="circuit_open"');
  redis.thaw();
  expectAnswered("Redis healthy", healthy, total);
  expectAnswered("Redis frozen, breaker open", frozen, total);
  expectWork(opening.length > 0, "requests met the frozen Redis before the breaker opened");
  expectAtLeast("decisions made without Redis while the breaker was open (circuit_open)", circuitOpen, total);

  const row = (name: string, p: Probe) =>
    `| ${name} | ${p.count} | ${p.p50.toFixed(2)} | ${p.p90.toFixed(2)} | ${p.p99.toFixed(2)} | ${p.errors} |`;
  console.log(`requests: ${total} per phase, concurrency ${concurrency}`);
  console.log("| phase | answered | p50 ms | p90 ms | p99 ms | errors |");
  console.log("|---|---|---|---|---|---|");
  console.log(row("Redis healthy", healthy));
  console.log(row("Redis frozen, breaker open", frozen));
  console.log(
    `breaker opened ${openedAfterMs.toFixed(0)} ms after the freeze; the ${opening.length} requests before it took ` +
      `${Math.min(...opening).toFixed(0)}–${Math.max(...opening).toFixed(0)} ms`,
  );
  console.log(`added p99 with the breaker open: ${(frozen.p99 - healthy.p99).toFixed(2)} ms`);
  console.log(`decisions made without Redis (circuit_open): ${circuitOpen}`);
  workChecked(`${2 * total} completions; the breaker opened and ${circuitOpen} decisions were made without Redis`);
} finally {
  redis.thaw();
  await cleanup();
  await redis.stop();
}
