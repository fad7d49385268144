// The scraper's benchmarks in their smoke mode (bench/work.ts): a few pages per level through the
// whole path (API, rendering service, Chromium), and the Markdown fidelity run on two pages per
// documentation site (Debian packages and the converters' virtualenv from
// scripts/setup.d/55-scraper-bench.sh). Each benchmark checks its own work; only that is asserted.
import { describe, expect, it } from "vitest";
import { smoke } from "./run-bench.ts";

describe("scraper benchmarks (smoke)", () => {
  it("bench.ts scrapes every page asked for, rendered, at each level and in the RSS run", async () => {
    const out = await smoke("bench/scraper/bench.ts", [], { timeoutMs: 90_000 });
    expect(out).toMatch(/work checked: \d+ pages scraped and 24 fetched/);
    expect(out).toMatch(/concurrency 8: .* \(8 pages\)/);
  });

  it("job-queue.ts moves every job through BullMQ and the hand-written queue", async () => {
    const out = await smoke("bench/scraper/job-queue.ts", [], { timeoutMs: 60_000 });
    expect(out).toContain("work checked: 200 jobs through each queue in 1 round(s)");
  });

  it("fidelity/run.ts scores pages of every site with output from all three converters", async () => {
    const out = await smoke("bench/scraper/fidelity/run.ts", [], { timeoutMs: 90_000 });
    expect(out).toContain("work checked: 8 pages of 8 scored (python, postgresql, rustdoc, debian-reference)");
  });
});
