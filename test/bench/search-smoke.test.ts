// Smoke runs of the search benchmarks (bench/search): each in its smoke mode, on the real model,
// the embedded store and the vendored Qdrant, checking its own work (bench/work.ts). A benchmark
// whose work silently disappears (a search answering [] because it addressed the wrong key) fails
// here the day it breaks. No timing is asserted.
import { describe, expect, it } from "vitest";
import { smoke } from "./run-bench.ts";

describe("search benchmarks, smoke mode", () => {
  it("search-bench: every chunk stored and every end-to-end search answered with hits, on both stores", async () => {
    const out = await smoke("bench/search/search-bench.ts", ["--backend", "embedded,qdrant"], { timeoutMs: 240_000 });
    expect(out).toMatch(/embedded: search end-to-end p50 .* answers hit the exact top 10/);
    expect(out).toMatch(/qdrant: search end-to-end p50 .* answers hit the exact top 10/);
  });

  it("qdrant-throughput: both setups hold every chunk and answer every query with 10 hits", async () => {
    const out = await smoke("bench/search/qdrant-throughput.ts", [], { timeoutMs: 240_000 });
    expect(out).toMatch(/3-peer cluster c=16: \d+ queries\/s/);
  });

  it("ingest-bench: the store holds every chunk ingested", async () => {
    expect(await smoke("bench/search/ingest-bench.ts", [], { timeoutMs: 120_000 })).toMatch(/ingested \d+ chunks/);
  });

  it("layout-bench: both Qdrant layouts hold every point and answer from their tenant", async () => {
    expect(await smoke("bench/search/layout-bench.ts", [], { timeoutMs: 120_000 })).toMatch(/\| shared \|/);
  });

  it("switch-bench: every switch serves its model", async () => {
    expect(await smoke("bench/search/switch-bench.ts", [], { timeoutMs: 120_000 })).toMatch(/switch: /);
  });

  it("relevance: every answerable question finds hits over the example knowledge base", async () => {
    expect(await smoke("bench/search/relevance.ts", [], { timeoutMs: 180_000 })).toMatch(/Best separation/);
  });

  it("tokenize-bench: Capstan's tokenizer gives Python's ids", async () => {
    expect(await smoke("bench/search/tokenize-bench.ts", [], { timeoutMs: 120_000 })).toMatch(
      /ids differing from Python: 0\//,
    );
  });

  it("query-latency-bench: both arms answer their vectors", async () => {
    expect(await smoke("bench/search/query-latency-bench.ts", [], { timeoutMs: 180_000 })).toMatch(/idle: +p50/);
  });

  it("embed-bench: both arms embed every chunk, the same vectors", async () => {
    expect(await smoke("bench/search/embed-bench.ts", [], { timeoutMs: 600_000 })).toMatch(/python\/capstan/);
  });
});
