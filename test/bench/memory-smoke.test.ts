// The memory benchmark in its smoke mode (bench/work.ts): 20 requests to each process (the
// gateway's chat completions, the console's Agent list, search's searches over an ingested
// document, the operator's AccessChannels reconciled on a private API server), each run from this
// tree's bundle as its image runs it; it checks every answer, only that is asserted.
import { describe, expect, it } from "vitest";
import { smoke } from "./run-bench.ts";

describe("memory benchmark (smoke)", () => {
  it("idle-rss.ts measures each process after its requests were answered", async () => {
    const out = await smoke("bench/memory/idle-rss.ts", [], { timeoutMs: 240_000 });
    expect(out).toMatch(/work checked: 20 requests per process answered as expected/);
    for (const service of ["gateway", "console", "search", "operator"]) {
      expect(out).toMatch(new RegExp(`^${service}\\tthis tree, 1 s idle\\tRSS [0-9.]+ MiB`, "m"));
    }
  });
});
