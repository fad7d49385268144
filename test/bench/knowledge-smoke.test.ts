// The knowledge-at-scale benchmark in its smoke mode (bench/work.ts): a 200-page loopback site
// crawled into one KnowledgeBase by the real operator, search (its local model) and scraper
// (Chromium), each its own process on a private API server, then refreshed after 1 % of the pages
// changed. The benchmark checks its own work (every page in status and searchable, exactly the
// changed pages embedded again, small annotations); only that and its printed ratio are asserted.
import { describe, expect, it } from "vitest";
import { smoke } from "./run-bench.ts";

describe("knowledge benchmark (smoke)", () => {
  it("bench.ts crawls every page into search and re-embeds only the changed ones", async () => {
    const out = await smoke("bench/knowledge/bench.ts", [], { timeoutMs: 240_000 });
    expect(out).toContain("work checked: 202 pages crawled, ingested and searchable");
    expect(out).toMatch(/embedding work: first 202 chunks, second 2 chunks; ratio 0\.99 %/);
  });
});
