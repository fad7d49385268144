// Redis work per chat request, the input of the capacity model (docs/scaling.md): a gateway
// process as deployed on its own Redis, one channel without and one with keepHistory, N requests
// each (the extractive agent: no provider, so only the gateway's own Redis use is counted). From
// Redis' INFO between the runs: commands the gateway sent per request (EVALSHA, ...), commands run
// inside the scripts, and Redis' CPU (user + sys) per request, hence requests/s one Redis core holds.
// Run: node bench/gateway/redis-ops.ts   (env: BENCH_REQUESTS, BENCH_CONNECTIONS)
//   --smoke: 100 requests (bench/work.ts); every request must be answered 200.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKey, hashKey } from "@capstan/shared";
import { Redis } from "ioredis";
import { Pool } from "undici";
import { startRedis } from "../../test/ground/redis.ts";
import { expectCount, expectWork, sized, workChecked } from "../work.ts";
import { CHAT_BODY, cleanup, startGatewayProcess } from "./harness.ts";

const total = Number(process.env.BENCH_REQUESTS ?? sized(5000, 100));
const connections = Number(process.env.BENCH_CONNECTIONS ?? 16);

function channel(name: string, keepHistory: boolean): { yaml: string; key: string } {
  const key = generateKey("chat");
  const yaml = `apiVersion: capstan.dev/v1alpha1
kind: AccessChannel
metadata: {name: ${name}, namespace: bench}
spec: {channelName: ${name}, agentRef: {name: offline}, qpm: 1000000, keepHistory: ${keepHistory}}
status: {keyHash: "${hashKey(key)}"}
`;
  return { yaml, key };
}

/** INFO commandstats as {command: calls}, and Redis' CPU seconds (user + sys). */
async function redisStats(redis: Redis): Promise<{ calls: Record<string, number>; cpu: number }> {
  const calls: Record<string, number> = {};
  for (const line of (await redis.info("commandstats")).split("\n")) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m) calls[m[1] as string] = Number(m[2]);
  }
  const cpu = await redis.info("cpu");
  const num = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(cpu)?.[1] ?? 0);
  return { calls, cpu: num("used_cpu_user") + num("used_cpu_sys") };
}

const redisServer = await startRedis();
const redis = new Redis(redisServer.url);
const dir = mkdtempSync(join(tmpdir(), "gw-redis-ops-"));
try {
  const plain = channel("plain", false);
  const kept = channel("kept", true);
  writeFileSync(
    join(dir, "resources.yaml"),
    `apiVersion: capstan.dev/v1alpha1
kind: Agent
metadata: {name: offline, namespace: bench}
spec: {description: offline}
---
${plain.yaml}---
${kept.yaml}`,
  );
  const url = await startGatewayProcess({ CAPSTAN_RESOURCES_DIR: dir, REDIS_URL: redisServer.url });
  const pool = new Pool(url, { connections });
  const send = async (key: string, n: number): Promise<number> => {
    let ok = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (next < n) {
          next++;
          const res = await pool.request({
            method: "POST",
            path: "/api/v1/chat/completions",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: CHAT_BODY,
          });
          await res.body.arrayBuffer();
          if (res.statusCode === 200) ok++;
        }
      }),
    );
    return ok;
  };
  for (const [name, ch] of [
    ["without history", plain],
    ["with keepHistory", kept],
  ] as const) {
    await send(ch.key, 50); // warm: scripts loaded, connections open
    await new Promise((r) => setTimeout(r, 500)); // buffered history writes of the warm-up land
    const before = await redisStats(redis);
    const t0 = performance.now();
    const ok = await send(ch.key, total);
    const seconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 500));
    const after = await redisStats(redis);
    expectCount(`${name}: requests answered 200`, ok, total);
    const delta: Record<string, number> = {};
    for (const [cmd, n] of Object.entries(after.calls)) {
      const d = n - (before.calls[cmd] ?? 0);
      if (d > 0 && cmd !== "info") delta[cmd] = d;
    }
    const sent = (delta.evalsha ?? 0) + (delta.eval ?? 0) + (delta.xrevrange ?? 0) + (delta.ping ?? 0);
    const all = Object.values(delta).reduce((a, b) => a + b, 0);
    const cpuUs = ((after.cpu - before.cpu) * 1e6) / total;
    console.log(`${name}: ${total} requests in ${seconds.toFixed(1)} s (${Math.round(total / seconds)} req/s)`);
    console.log(
      `  round trips to Redis per request: ${(sent / total).toFixed(2)} (${JSON.stringify({ evalsha: delta.evalsha ?? 0, ping: delta.ping ?? 0 })})`,
    );
    console.log(
      `  Redis commands per request incl. those inside scripts: ${(all / total).toFixed(2)} ${JSON.stringify(delta)}`,
    );
    console.log(
      `  Redis CPU per request: ${cpuUs.toFixed(1)} µs -> one Redis core: ~${Math.round(1e6 / cpuUs)} requests/s`,
    );
  }
  // Memory per admitted request (the sliding log) and per stored exchange (the history stream).
  const memory: Array<[string, string, (k: string) => Promise<number>]> = [
    ["sliding-log entry", "capstan:rl:bench/kept", (k) => redis.zcard(k)],
    ["history exchange", "capstan:history:bench/kept", (k) => redis.xlen(k)],
  ];
  for (const [what, key, count] of memory) {
    const bytes = Number(await redis.memory("USAGE", key, "SAMPLES", "0"));
    const n = await count(key);
    expectWork(n > 0, `${key} holds entries`);
    console.log(`  memory per ${what}: ${(bytes / n).toFixed(0)} bytes (${n} in ${key})`);
  }
  // Each kept exchange also leaves a write marker (idempotent appends) for an hour.
  const [, markers] = await redis.scan("0", "MATCH", "{capstan:history:bench/kept}:written:*", "COUNT", 1000);
  expectWork(markers.length > 0, "history write markers exist");
  const markerBytes = Number(await redis.memory("USAGE", markers[0] as string, "SAMPLES", "0"));
  console.log(`  memory per history write marker (kept 1 h): ${markerBytes} bytes`);
  await pool.close();
  workChecked(`${total} requests per channel, every one answered 200 and counted in Redis`);
} finally {
  redis.disconnect();
  await cleanup();
  await redisServer.stop();
  rmSync(dir, { recursive: true, force: true });
}
