// The queue under the scraper's shared jobs (src/crawl/shared-jobs.ts): BullMQ against the
// smallest Redis queue one would write by hand for the same job (LPUSH, then BLMOVE into a
// processing list and LREM once done: at-least-once, no retries, no delays, no de-duplication, no
// takeover of a dead consumer's items). Both move the same number of no-op page jobs through the
// same number of consumers on one real redis-server on loopback; the figures are jobs per second
// and Redis commands per job (INFO commandstats before and after; commands inside Lua scripts count). What the hand-written queue
// lacks is what a crawl needs after a replica dies (docs/scraper.md, "Jobs").
//
//   node bench/scraper/job-queue.ts [--jobs 20000] [--concurrency 8] [--rounds 3]
//   node bench/scraper/job-queue.ts --smoke
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { startRedis } from "../../test/ground/redis.ts";
import { expectCount, sized, workChecked } from "../work.ts";

const args = new Map<string, string>();
const argv = process.argv.slice(2).filter((a) => a !== "--smoke");
for (let i = 0; i < argv.length; i += 2) args.set(argv[i] ?? "", argv[i + 1] ?? "");
const JOBS = Number(args.get("--jobs") ?? sized(20_000, 200));
const CONCURRENCY = Number(args.get("--concurrency") ?? 8);
const ROUNDS = Number(args.get("--rounds") ?? sized(3, 1));

async function commands(redis: Redis): Promise<number> {
  const info = await redis.info("commandstats");
  let total = 0;
  for (const m of info.matchAll(/calls=(\d+)/g)) total += Number(m[1]);
  return total;
}

async function bullmq(url: string, round: number): Promise<{ ms: number; done: number }> {
  const prefix = `{bench-${round}}`;
  const name = "pages";
  const queueConnection = new Redis(url, { maxRetriesPerRequest: null });
  const workerConnection = new Redis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(name, { connection: queueConnection, prefix });
  let done = 0;
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const worker = new Worker(
    name,
    async () => {
      if (++done === JOBS) finish();
    },
    { connection: workerConnection, prefix, concurrency: CONCURRENCY },
  );
  await worker.waitUntilReady();
  const started = performance.now();
  for (let i = 0; i < JOBS; i += 1_000) {
    const n = Math.min(1_000, JOBS - i);
    await queue.addBulk(
      Array.from({ length: n }, (_, j) => ({
        name,
        data: { job: "bench", key: `k${i + j}`, url: `http://127.0.0.1/p${i + j}`, depth: 1 },
        opts: { jobId: `bench.${i + j}`, removeOnComplete: true, attempts: 5 },
      })),
    );
  }
  await finished;
  const ms = performance.now() - started;
  await worker.close();
  await queue.close();
  // Given as instances, the connections are ours to close.
  queueConnection.disconnect();
  workerConnection.disconnect();
  return { ms, done };
}

async function handWritten(url: string, round: number): Promise<{ ms: number; done: number }> {
  const src = `{hand-${round}}:wait`;
  const processing = `{hand-${round}}:active`;
  const producer = new Redis(url);
  let done = 0;
  const consumers = Array.from({ length: CONCURRENCY }, () => new Redis(url));
  const started = performance.now();
  for (let i = 0; i < JOBS; i += 1_000) {
    const n = Math.min(1_000, JOBS - i);
    const items = Array.from({ length: n }, (_, j) =>
      JSON.stringify({ job: "bench", key: `k${i + j}`, url: `http://127.0.0.1/p${i + j}`, depth: 1 }),
    );
    await producer.lpush(src, ...items);
  }
  await Promise.all(
    consumers.map(async (c) => {
      for (;;) {
        const item = await c.blmove(src, processing, "RIGHT", "LEFT", 0.05);
        if (item === null) {
          if (done >= JOBS) return;
          continue;
        }
        done++;
        await c.lrem(processing, 1, item);
      }
    }),
  );
  const ms = performance.now() - started;
  for (const c of consumers) c.disconnect();
  producer.disconnect();
  return { ms, done };
}

const redis = await startRedis();
const stats = new Redis(redis.url);
try {
  const rows: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating order, so that neither always runs on a warmer server.
    const arms = round % 2 === 0 ? (["bullmq", "hand"] as const) : (["hand", "bullmq"] as const);
    for (const arm of arms) {
      const before = await commands(stats);
      const r = arm === "bullmq" ? await bullmq(redis.url, round) : await handWritten(redis.url, round);
      const calls = (await commands(stats)) - before;
      expectCount(`${arm} jobs processed (round ${round})`, r.done, JOBS);
      rows.push(
        `round ${round} ${arm}: ${JOBS} jobs in ${r.ms.toFixed(0)} ms, ${((JOBS / r.ms) * 1000).toFixed(0)} jobs/s, ` +
          `${(calls / JOBS).toFixed(2)} Redis commands per job (concurrency ${CONCURRENCY})`,
      );
      console.log(rows.at(-1));
    }
  }
  workChecked(`${JOBS} jobs through each queue in ${ROUNDS} round(s)`);
} finally {
  stats.disconnect();
  await redis.stop();
}
