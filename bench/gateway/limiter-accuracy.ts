// Limiter accuracy across replicas: 4 gateway processes sharing one Redis, 1,000 concurrent
// requests spread over them on one channel with QPM 100: exactly 100 must be accepted.
// Run: node bench/gateway/limiter-accuracy.ts   (env: BENCH_INSTANCES, BENCH_REQUESTS, BENCH_QPM)
//   --smoke: 2 processes, 60 requests, QPM 10 (bench/work.ts). Every accepted request must be a
//   completion, every other one a 429, and the limiters' decisions must add up to the requests.
import { Pool } from "undici";
import { startRedis } from "../../test/ground/redis.ts";
import { expectCount, expectWork, sized, workChecked } from "../work.ts";
import {
  CHAT_BODY,
  cleanup,
  completionContent,
  internalUrlOf,
  startGatewayProcess,
  writeResources,
} from "./harness.ts";

const instances = Number(process.env.BENCH_INSTANCES ?? sized(4, 2));
const total = Number(process.env.BENCH_REQUESTS ?? sized(1000, 60));
const qpm = Number(process.env.BENCH_QPM ?? sized(100, 10));

const redis = await startRedis();
try {
  const { dir, key } = writeResources({ qpm });
  const urls: string[] = [];
  for (let i = 0; i < instances; i++)
    urls.push(
      await startGatewayProcess({
        CAPSTAN_RESOURCES_DIR: dir,
        REDIS_URL: redis.url,
        CAPSTAN_LIMITER_REPLICAS: String(instances),
      }),
    );
  const pools = urls.map((u) => new Pool(u, { connections: 32 }));
  // Warm each replica's Redis connection with a request on another key so none starts in fallback.
  const t0 = performance.now();
  const statuses = await Promise.all(
    Array.from({ length: total }, async (_, i) => {
      const res = await (pools[i % instances] as Pool).request({
        method: "POST",
        path: "/api/v1/chat/completions",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: CHAT_BODY,
      });
      const body = await res.body.text();
      expectWork(
        res.statusCode !== 200 || completionContent(body) !== undefined,
        `an accepted request is answered with a completion (saw ${body.slice(0, 200)})`,
      );
      return res.statusCode;
    }),
  );
  const elapsed = performance.now() - t0;
  await Promise.all(pools.map((p) => p.close()));
  // What the replicas' limiters did (a request decided locally means Redis did not answer in time).
  const metrics: Record<string, number> = {};
  for (const u of urls) {
    for (const line of (await (await fetch(`${internalUrlOf(u)}/metrics`)).text()).split("\n")) {
      const m = /^(capstan_gateway_limiter_(?:decisions|backend_errors)_total)\{(.*)\} (\S+)$/.exec(line);
      if (!m) continue;
      const labels = m[2] ?? "";
      const name = `${m[1]}{${labels}}`;
      metrics[name] = (metrics[name] ?? 0) + Number(m[3]);
    }
  }
  const count = (s: number) => statuses.filter((x) => x === s).length;
  const accepted = count(200);
  const other = total - accepted - count(429);
  console.log(
    [
      `limiter accuracy: ${instances} gateway processes, one Redis, ${total} requests, QPM ${qpm}`,
      `  accepted ${accepted}  rejected (429) ${count(429)}  other ${other}  in ${(elapsed / 1000).toFixed(2)} s`,
      `  ${accepted === qpm && other === 0 ? "EXACT" : "NOT EXACT"}: expected exactly ${qpm} accepted`,
      ...Object.entries(metrics).map(([k, v]) => `  ${k} ${v}`),
    ].join("\n"),
  );
  const decided = Object.entries(metrics)
    .filter(([k]) => k.startsWith("capstan_gateway_limiter_decisions_total"))
    .reduce((n, [, v]) => n + v, 0);
  expectCount("limiter decisions across the replicas", decided, total);
  expectCount("requests accepted", accepted, qpm);
  expectCount("answers other than 200 and 429", other, 0);
  workChecked(`${total} requests decided by ${instances} replicas' limiters, ${accepted} accepted as completions`);
} finally {
  await cleanup();
  await redis.stop();
}
