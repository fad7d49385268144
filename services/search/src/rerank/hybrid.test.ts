import { describe, expect, it } from "vitest";
import { bm25, HybridReranker, terms } from "./hybrid.ts";

describe("bm25", () => {
  it("scores documents holding rare query terms higher", () => {
    const docs = ["the error code E1234 means the disk is full", "the disk is fine", "unrelated text about cats"];
    const s = bm25("what is error E1234", docs);
    expect(s[0]).toBeGreaterThan(s[1] as number);
    expect(s[2]).toBe(0);
  });

  it("folds case and accents", () => {
    expect(terms("Café RÉSUMÉ, naïve!")).toEqual(["cafe", "resume", "naive"]);
  });
});

describe("HybridReranker", () => {
  it("fuses vector and lexical scores into 0..1", async () => {
    const r = new HybridReranker(0.8);
    const out = await r.rerank("error E1234", [
      { text: "general troubleshooting advice", score: 0.9 },
      { text: "error E1234: the disk is full", score: 0.86 },
    ]);
    for (const x of out) expect(x).toBeGreaterThanOrEqual(0);
    for (const x of out) expect(x).toBeLessThanOrEqual(1);
    // The exact-term match overtakes the slightly closer vector hit.
    expect(out[1]).toBeGreaterThan(out[0] as number);
    expect(out[0]).toBeCloseTo(0.72, 6);
  });

  it("keeps vector order when no candidate shares a term", async () => {
    const out = await new HybridReranker(0.8).rerank("zzz", [
      { text: "a", score: 0.9 },
      { text: "b", score: 0.8 },
    ]);
    expect(out[0]).toBeCloseTo(0.72, 6);
    expect(out[1]).toBeCloseTo(0.64, 6);
  });

  it("rejects a weight outside 0..1", () => {
    expect(() => new HybridReranker(1.5)).toThrow();
  });
});
