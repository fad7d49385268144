// A process for idle-memory.test.ts: grows V8's young generation with a burst of short-lived
// allocations (as a burst of requests does), then stays quiet. Prints one JSON line per release
// (the resident set and the young generation before and after) and "done" after DONE_MS.
import { getHeapSpaceStatistics } from "node:v8";
import { releaseMemoryWhenIdle } from "./idle-memory.ts";

const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === "new_space")?.space_size ?? 0;
releaseMemoryWhenIdle({
  quietMs: 1_000,
  checkMs: 200,
  onRelease: (r) => process.stdout.write(`${JSON.stringify({ ...r, newSpaceAfter: newSpace() })}\n`),
});
// About a second of allocation, ~2 GB in short-lived objects with a few survivors per round.
const keep: unknown[] = [];
const until = Date.now() + 1_000;
while (Date.now() < until) {
  const batch = Array.from({ length: 10_000 }, (_, i) => ({ i, s: `item ${i}`, a: [i, i + 1] }));
  keep.push(batch[0]);
  if (keep.length > 1_000) keep.length = 0;
}
process.stdout.write(`${JSON.stringify({ burst: true, rss: process.memoryUsage.rss(), newSpace: newSpace() })}\n`);
setTimeout(() => process.stdout.write("done\n"), Number(process.env.DONE_MS ?? 4_000));
