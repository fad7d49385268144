import { describe, expect, it } from "vitest";
import { cosineFloorOf, cosineToScore, RELEVANT_COSINE, scoreToCosine } from "./types.ts";

describe("the one score mapping", () => {
  it("keeps opposite, orthogonal and identical at 0, 0.5 and 1, and puts the relevant cosine at 0.75", () => {
    expect(cosineToScore(1)).toBe(1);
    expect(cosineToScore(0)).toBe(0.5);
    expect(cosineToScore(-1)).toBe(0);
    expect(cosineToScore(-0.5)).toBe(0.25);
    expect(cosineToScore(RELEVANT_COSINE)).toBe(0.75);
    expect(cosineToScore(RELEVANT_COSINE / 2)).toBe(0.625);
    expect(cosineToScore((1 + RELEVANT_COSINE) / 2)).toBe(0.875);
    // float32 noise of a vector scored against itself (Qdrant: 0.99999994) is still exactly 1
    expect(cosineToScore(0.99999994)).toBe(1);
    expect(cosineToScore(1.0000001)).toBe(1);
    expect(cosineToScore(-1.0000001)).toBe(0);
  });

  it("is monotonic, so ordering by score is ordering by cosine", () => {
    let last = -1;
    for (let c = -1; c <= 1; c += 0.001) {
      const s = cosineToScore(c);
      expect(s).toBeGreaterThanOrEqual(last);
      last = s;
    }
  });

  it("scoreToCosine is its inverse", () => {
    for (const s of [0, 0.1, 0.5, 0.6, 0.75, 0.8, 0.95, 1]) expect(cosineToScore(scoreToCosine(s))).toBe(s);
  });

  it("the pre-filter floor lets through every cosine whose score reaches the minimum", () => {
    for (const min of [0, 0.25, 0.5, 0.6, 0.75, 0.812346, 0.999999, 1]) {
      const floor = cosineFloorOf(min);
      // the lowest cosine that still scores `min` after rounding is above the floor
      const lowest = scoreToCosine(min - 0.5e-6);
      expect(floor).toBeLessThan(lowest);
      expect(cosineToScore(lowest + 1e-9)).toBeGreaterThanOrEqual(min);
      // and the floor is tight: a few ulps, not a different threshold
      expect(lowest - floor).toBeLessThan(1e-5);
    }
  });
});
